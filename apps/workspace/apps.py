from django.apps import AppConfig


class WorkspaceConfig(AppConfig):
    name = "apps.workspace"
    label = "workspace"
    verbose_name = "Workspace changes"

    def ready(self) -> None:
        from apps.runs import lifecycle
        from apps.workspace import hooks

        # A snapshot of the thread's files before the graph, the change record and the
        # delivery receipt journaled with the run's final row.
        lifecycle.before_run.register(hooks.before_run)
        lifecycle.before_settle.register(hooks.before_settle)
        # ... and for a run settled without them (a cancel or recovery), a receipt of nothing.
        lifecycle.settled.register(hooks.settled)
