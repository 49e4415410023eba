from django.contrib import admin

from apps.skills.models import GlobalSkillChange, SkillRevision, SkillState
from harness.skills.loader import global_root


@admin.register(SkillState)
class SkillStateAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "enabled", "updated_at"]
    list_filter = ["enabled", ("owner", admin.EmptyFieldListFilter)]
    search_fields = ["name", "owner__username"]
    list_select_related = ["owner"]


@admin.register(GlobalSkillChange)
class GlobalSkillChangeAdmin(admin.ModelAdmin):
    """Read-only: the rows are the record of what happened; changes go through the Skills page
    or the API, which scan and install atomically."""

    list_display = ["name", "action", "version", "actor", "created_at", "installed_now", "finding_count"]
    list_filter = ["action"]
    search_fields = ["name", "actor__username"]
    list_select_related = ["actor"]
    readonly_fields = ["name", "action", "version", "actor", "findings", "created_at"]

    @admin.display(boolean=True, description="installed now")
    def installed_now(self, obj) -> bool:
        return (global_root() / obj.name / "SKILL.md").is_file()

    @admin.display(description="findings")
    def finding_count(self, obj) -> int:
        return len(obj.findings or [])

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(SkillRevision)
class SkillRevisionAdmin(admin.ModelAdmin):
    """Read-only: what the agent changed in users' own skills (skill_manage). Restoring is the
    owner's, from the Skills page, through the same scan as the agent's writes."""

    list_display = ["name", "owner", "action", "file_path", "thread_id", "created_at"]
    list_filter = ["action"]
    search_fields = ["name", "owner__username", "thread_id"]
    list_select_related = ["owner"]
    readonly_fields = ["owner", "name", "action", "file_path", "thread_id", "prev_content", "new_content", "findings",
                       "moderation", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
