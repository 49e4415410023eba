"""Operator pages: health, usage and cost reporting, the landing page."""
