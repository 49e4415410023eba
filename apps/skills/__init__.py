"""Skill enable state and the install/list API."""
