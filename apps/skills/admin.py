from django.contrib import admin

from apps.skills.models import SkillState


@admin.register(SkillState)
class SkillStateAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "enabled", "updated_at"]
    list_filter = ["enabled"]
    search_fields = ["name", "owner__username"]
    list_select_related = ["owner"]
