from django.contrib import admin, messages

from apps.runs.models import Run, RunEvent
from apps.runs.pricing import cost_of, cost_text, run_usage_by_model
from deerflow_site.errors import DomainError


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "thread", "owner", "status", "model_name", "total_tokens", "cost", "duration", "created_at", "finished_at", "request_id"]
    list_filter = ["status", "model_name", "multitask_strategy", "stop_reason", "created_at"]
    search_fields = ["id", "thread__id", "thread__title", "owner__username", "error", "request_id"]
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


# -- scheduled tasks ---------------------------------------------------------------------------

from apps.runs.models import ScheduledTask, ScheduledTaskRun  # noqa: E402


class ScheduledTaskRunInline(admin.TabularInline):
    model = ScheduledTaskRun
    fields = ["created_at", "trigger", "status", "run", "thread_id", "error", "finished_at"]
    readonly_fields = fields
    ordering = ["-created_at"]
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True


from django import forms  # noqa: E402


class ScheduledTaskForm(forms.ModelForm):
    class Meta:
        model = ScheduledTask
        fields = "__all__"

    def clean(self):
        # The API's own checks on a scratch copy, so admin cannot save what the API refuses.
        from apps.runs.scheduling.services import FIELDS, _apply

        data = super().clean()
        owner = data.get("owner") or (self.instance.owner if self.instance.owner_id else None)
        if owner is not None:
            try:
                scratch = ScheduledTask(owner=owner)
                _apply(scratch, {f: data[f] for f in FIELDS if f in data}, user=owner)
                if scratch.is_once and (not self.instance.pk or {"schedule_type", "run_at", "timezone"} & set(self.changed_data)):
                    from django.utils import timezone

                    from apps.runs.scheduling.once import require_future

                    require_future(scratch.run_at, now=timezone.now())
            except DomainError as exc:
                field, sep, _ = exc.detail.partition(":")
                name = field.removeprefix("schedule_spec.").split(".")[0]
                self.add_error(name if sep and name in self.fields else None, exc.detail)
        return data


@admin.register(ScheduledTask)
class ScheduledTaskAdmin(admin.ModelAdmin):
    form = ScheduledTaskForm
    list_display = ["title", "owner", "schedule", "timezone", "enabled", "context_mode", "next_run_at", "last_run_at", "run_count", "last_error"]
    list_filter = ["schedule_type", "enabled", "context_mode", "timezone"]
    search_fields = ["id", "title", "prompt", "owner__username"]
    list_select_related = ["owner"]
    readonly_fields = ["id", "periodic_task", "next_run_at", "completed_at", "last_run_at", "last_run_id", "last_thread_id", "last_error",
                       "run_count", "created_at", "updated_at"]
    inlines = [ScheduledTaskRunInline]
    actions = ["trigger_now", "disable", "enable"]

    @admin.display(description="Schedule", ordering="cron")
    def schedule(self, obj: ScheduledTask) -> str:
        from apps.runs.scheduling.serializers import _describe

        return obj.cron if not obj.is_once else _describe(obj)

    def save_model(self, request, obj, form, change):
        # Through the service, so the schedule is validated and the beat entry follows.
        from apps.runs.scheduling import services

        data = {f: form.cleaned_data[f] for f in services.FIELDS if f in form.cleaned_data}
        if change:
            services.scheduled_task_update(task=ScheduledTask.objects.get(pk=obj.pk), data=data)
        else:
            saved = services.scheduled_task_create(user=form.cleaned_data["owner"], data=data)
            obj.pk = saved.pk

    @admin.action(description="Trigger now (manual run)")
    def trigger_now(self, request, queryset):
        from apps.runs.scheduling.dispatch import dispatch

        for task in queryset:
            try:
                row = dispatch(task.pk, trigger=ScheduledTaskRun.Trigger.MANUAL)
                self.message_user(request, f"{task.title}: run started ({row.status})")
            except DomainError as exc:
                self.message_user(request, f"{task.title}: {exc.detail}", level=messages.WARNING)

    @admin.action(description="Resume (enable) selected schedules")
    def enable(self, request, queryset):
        self._set_enabled(request, queryset, True)

    @admin.action(description="Pause (disable) selected schedules")
    def disable(self, request, queryset):
        self._set_enabled(request, queryset, False)

    def _set_enabled(self, request, queryset, enabled: bool) -> None:
        from apps.runs.scheduling.services import scheduled_task_set_enabled

        for task in queryset:
            scheduled_task_set_enabled(task=task, enabled=enabled)
        self.message_user(request, f"{queryset.count()} task(s) {'enabled' if enabled else 'disabled'}")


@admin.register(ScheduledTaskRun)
class ScheduledTaskRunAdmin(admin.ModelAdmin):
    list_display = ["task", "trigger", "status", "run", "created_at", "finished_at", "error"]
    list_filter = ["status", "trigger", "created_at"]
    search_fields = ["task__id", "task__title", "run__id", "thread_id"]
    list_select_related = ["task", "run"]
    readonly_fields = [f.name for f in ScheduledTaskRun._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
