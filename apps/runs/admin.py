from django.contrib import admin, messages

from apps.errors import DomainError
from apps.runs.models import Run, RunEvent, ThreadReservation
from apps.runs.pricing import cost_of, cost_text, run_usage_by_model


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "thread", "owner", "status", "model_name", "total_tokens", "cost", "duration", "created_at", "finished_at", "request_id"]
    list_filter = ["status", "model_name", "multitask_strategy", "stop_reason", "created_at"]
    search_fields = ["id", "thread__id", "thread__title", "owner__username", "error", "request_id", "trace_id"]
    date_hierarchy = "created_at"
    list_select_related = ["owner", "thread"]
    actions = ["cancel_runs"]

    def has_add_permission(self, request) -> bool:
        return False

    # A run is history: editing what it did would make the journal lie. Without change
    # permission the page is read-only, with no Save buttons; actions still apply.
    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Tokens")
    def total_tokens(self, obj: Run) -> int:
        return obj.input_tokens + obj.output_tokens

    @admin.display(description="Cost")
    def cost(self, obj: Run) -> str:
        usage = run_usage_by_model(obj.token_usage, obj.model_name, obj.input_tokens, obj.output_tokens, obj.cache_read_tokens)
        return cost_text(cost_of(usage).as_dict()) if usage else "–"

    @admin.display(description="Duration")
    def duration(self, obj: Run) -> str:
        if not (obj.started_at and obj.finished_at):
            return "–"
        return f"{(obj.finished_at - obj.started_at).total_seconds():.1f} s"

    @admin.action(description="Cancel selected runs (interrupt)")
    def cancel_runs(self, request, queryset):
        from apps.runs.services import run_cancel

        for run in queryset.filter(status__in=Run.ACTIVE_STATUSES):
            try:
                run = run_cancel(run=run, wait=True, timeout=10)
                self.message_user(request, f"Run {run.pk}: {run.status}")
            except DomainError as exc:
                self.message_user(request, f"Run {run.pk}: {exc.detail}", level=messages.WARNING)
        skipped = queryset.exclude(status__in=Run.ACTIVE_STATUSES).count()
        if skipped:
            self.message_user(request, f"{skipped} selected run(s) had already finished.", level=messages.WARNING)


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


@admin.register(ThreadReservation)
class ThreadReservationAdmin(admin.ModelAdmin):
    """The thread operations holding a thread right now (a compaction, a branch, an artifact
    edit, a delete): what a run refused with 409 was waiting on. Rows go when the operation
    ends, or when recovery finds their process dead (lease lapsed)."""

    list_display = ["id", "kind", "thread", "owner", "lease_owner", "lease_expires_at", "created_at"]
    list_filter = ["kind"]
    search_fields = ["id", "thread__id", "owner__username", "lease_owner"]
    list_select_related = ["owner", "thread"]
    fields = ["id", "kind", "thread", "owner", "status", "lease_owner", "lease_expires_at", "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    # Deleting one frees its thread at once, as recovery would after its lease: for an
    # operator who knows its process is gone.
    def has_change_permission(self, request, obj=None) -> bool:
        return False
