"""Users, allauth wiring, personal access tokens, DRF auth classes and scopes."""
