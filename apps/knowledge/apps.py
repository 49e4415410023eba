from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "apps.knowledge"
    label = "knowledge"
    verbose_name = "Knowledge"

    def ready(self) -> None:
        from apps.accounts.settings_hub import SettingsSection, register_section
        from apps.knowledge import hooks
        from apps.knowledge.stores import DjangoKnowledgeStore
        from apps.runs import lifecycle
        from harness.knowledge.tools import set_knowledge_store

        set_knowledge_store(DjangoKnowledgeStore())
        # A run whose user, chat or agent has a collection gets knowledge_search.
        lifecycle.before_run.register(hooks.before_run)
        register_section(SettingsSection("knowledge", "Knowledge", "Collections of your documents the agent searches and cites; "
                                         "share them or give them to an agent.", "folder", "/knowledge/", order=45))
