from tests.apps.runs.conftest import scripted_agent  # noqa: F401  (the scripted test agent)
