from django.apps import AppConfig


class ThreadsConfig(AppConfig):
    name = "apps.threads"
    label = "threads"
    verbose_name = "Threads"

    def ready(self) -> None:
        from apps.threads.stores import DjangoOwnershipStore
        from harness.sandbox.ownership import set_ownership_store

        # Sandbox containers are leased per thread in the database, so every server process
        # sees who owns which (docs/sandbox.md, "Ownership").
        set_ownership_store(DjangoOwnershipStore())
