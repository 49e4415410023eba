from django.apps import AppConfig


class SchedulesConfig(AppConfig):
    name = "apps.schedules"
    label = "schedules"
    verbose_name = "Scheduled tasks"

    def ready(self) -> None:
        from apps.runs import lifecycle
        from apps.schedules import signals, tasks  # noqa: F401  (the beat-entry cleanup; beat's task)
        from apps.schedules.services import scheduled_run_settled

        # Inside the settle transaction: a firing's row ends with its run, in every process.
        lifecycle.settled.register(scheduled_run_settled)
