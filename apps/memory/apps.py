from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "apps.memory"
    label = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from apps.memory import hooks
        from apps.memory.stores import DjangoMemoryStore
        from apps.runs import lifecycle
        from harness.memory.tools import set_memory_store

        set_memory_store(DjangoMemoryStore())
        lifecycle.before_run.register(hooks.before_run)
        lifecycle.after_settle.register(hooks.after_run)
