from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "apps.chat"
    label = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        from apps.chat.actions import goals, replay
        from apps.runs import lifecycle

        # A failed regenerate or edit restores the thread with the run's last journal entries;
        # a turn on a thread with an active goal is judged, and may be followed by another.
        lifecycle.before_settle.register(replay.settle)
        # A run started from DeerFlow's regenerate/edit prepare step rewinds the thread first.
        lifecycle.before_run.register(replay.rewind_prepared)
        lifecycle.continuations.register(goals.continue_towards_goal)
