from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "apps.chat"
    label = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        from apps.chat.actions import goals, replay
        from apps.runs import lifecycle

        # A failed regenerate or edit restores the thread with the run's last journal entries;
        # a successful run on a thread with a goal may admit the next continuation.
        lifecycle.before_settle.register(replay.settle)
        # A run started from DeerFlow's regenerate/edit prepare step rewinds the thread first.
        lifecycle.before_run.register(replay.rewind_prepared)
        lifecycle.after_settle.register(goals.continue_towards_goal)
