"""Custom agents, the assistants API and the model list; loads the harness config at startup."""
