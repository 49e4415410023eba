from django.apps import AppConfig


class ThreadsConfig(AppConfig):
    name = "apps.threads"
    label = "threads"
    verbose_name = "Threads"

    def ready(self) -> None:
        from apps.runs import lifecycle
        from apps.threads.actions import goals, replay

        # A failed regenerate or edit restores the thread with the run's last journal entries;
        # a successful run on a thread with a goal may admit the next continuation.
        lifecycle.before_settle.register(replay.settle)
        lifecycle.after_settle.register(goals.continue_towards_goal)
