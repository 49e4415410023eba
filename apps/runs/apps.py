from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "apps.runs"
    label = "runs"
    verbose_name = "Runs"

    def ready(self) -> None:
        from apps.runs.scheduling import signals  # noqa: F401  (connects the beat-entry cleanup)
