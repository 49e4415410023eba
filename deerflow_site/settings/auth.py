"""Authentication: allauth, personal access tokens, CORS."""
