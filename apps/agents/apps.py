from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "apps.agents"
    label = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        # Validate config.yaml once at startup so a broken file stops the server with a
        # clear message instead of failing the first run. Later edits are re-read per run.
        from harness.config import get_app_config

        get_app_config()
