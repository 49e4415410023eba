from django.apps import AppConfig


class SkillsConfig(AppConfig):
    name = "apps.skills"
    label = "skills"
    verbose_name = "Skills"

    def ready(self) -> None:
        # The harness reads enable state through its port; here it is the database.
        from apps.skills.stores import OrmSkillHistoryStore, OrmSkillStateStore
        from harness.skills.manage import set_skill_history_store
        from harness.skills.state import set_skill_state_store

        set_skill_state_store(OrmSkillStateStore())
        # What skill_manage changes is recorded here (the Skills page's history, the admin).
        set_skill_history_store(OrmSkillHistoryStore())
