from django.contrib import admin

from apps.runs.models import Run, RunEvent


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "thread", "owner", "status", "model_name", "input_tokens", "output_tokens", "created_at", "finished_at"]
    list_filter = ["status", "model_name", "multitask_strategy", "created_at"]
    search_fields = ["id", "thread__id", "thread__title", "owner__username"]
    date_hierarchy = "created_at"
    list_select_related = ["owner", "thread"]
    # A run is history: editing what it did would make the journal lie.
    readonly_fields = [f.name for f in Run._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(RunEvent)
class RunEventAdmin(admin.ModelAdmin):
    list_display = ["thread", "seq", "run", "event_type", "category", "created_at"]
    list_filter = ["category", "event_type"]
    search_fields = ["thread__id", "run__id"]
    readonly_fields = [f.name for f in RunEvent._meta.fields]
    list_select_related = ["thread", "run"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
