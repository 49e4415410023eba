"""Threads, their state and history API, uploads, artifacts and feedback."""
