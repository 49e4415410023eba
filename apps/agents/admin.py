from django.contrib import admin

from apps.agents.models import Agent, AgentVersion


class AgentVersionInline(admin.TabularInline):
    model = AgentVersion
    extra = 0
    readonly_fields = ["version", "snapshot", "created_at"]
    can_delete = False


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["name", "display_name", "owner", "model", "shared", "version", "updated_at"]
    list_filter = ["shared", "model", "memory_enabled"]
    search_fields = ["name", "display_name", "description", "owner__username"]
    list_select_related = ["owner"]
    readonly_fields = ["id", "version", "created_at", "updated_at"]
    inlines = [AgentVersionInline]
