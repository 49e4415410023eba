from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "apps.memory"
    label = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from apps.memory.stores import DjangoMemoryStore
        from harness.memory.tools import set_memory_store

        set_memory_store(DjangoMemoryStore())
