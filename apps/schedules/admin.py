"""Scheduled tasks in admin. Writes go through the scheduling services, so admin cannot save
what the API refuses and the beat entry always follows the task."""

from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from apps.errors import DomainError
from apps.schedules import services
from apps.schedules.dispatch import dispatch
from apps.schedules.models import ScheduledTask, ScheduledTaskRun
from apps.schedules.once import require_future
from apps.schedules.serializers import _describe

class ScheduledTaskRunInline(admin.TabularInline):
    model = ScheduledTaskRun
    fields = ["created_at", "trigger", "status", "run", "thread_id", "error", "finished_at"]
    readonly_fields = fields
    ordering = ["-created_at"]
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True


class ScheduledTaskForm(forms.ModelForm):
    class Meta:
        model = ScheduledTask
        fields = "__all__"

    def clean(self):
        # The API's own checks on a scratch copy, so admin cannot save what the API refuses.
        data = super().clean()
        owner = data.get("owner") or (self.instance.owner if self.instance.owner_id else None)
        if owner is not None:
            try:
                scratch = ScheduledTask(owner=owner)
                services._apply(scratch, {f: data[f] for f in services.FIELDS if f in data}, user=owner)
                if scratch.is_once and (not self.instance.pk or {"schedule_type", "run_at", "timezone"} & set(self.changed_data)):
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
        return obj.cron if not obj.is_once else _describe(obj)

    def save_model(self, request, obj, form, change):
        # Through the service, so the schedule is validated and the beat entry follows.
        data = {f: form.cleaned_data[f] for f in services.FIELDS if f in form.cleaned_data}
        if change:
            services.scheduled_task_update(task=ScheduledTask.objects.get(pk=obj.pk), data=data)
        else:
            saved = services.scheduled_task_create(user=form.cleaned_data["owner"], data=data)
            obj.pk = saved.pk

    @admin.action(description="Trigger now (manual run)")
    def trigger_now(self, request, queryset):
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
        for task in queryset:
            services.scheduled_task_set_enabled(task=task, enabled=enabled)
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
