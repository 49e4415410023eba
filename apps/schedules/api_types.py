"""Wire types of scheduled tasks (API_CONTRACT.md §6.1). The write body's fields are
``services.FIELDS`` (the service refuses any other, naming it); ``TaskWrite`` publishes the
same set, held to it by tests/site/test_api_schema.py."""

from __future__ import annotations

from rest_framework import serializers

from apps.threads.api_types import free_object


TASK_STATUSES = ["running", "failed", "completed", "enabled", "paused"]
TASK_RUN_STATUSES = ["queued", "running", "success", "error", "skipped"]


class TaskOptions(serializers.Serializer):
    model_name = serializers.CharField(required=False, allow_null=True)
    thinking_enabled = serializers.BooleanField(required=False)
    is_plan_mode = serializers.BooleanField(required=False)
    subagent_enabled = serializers.BooleanField(required=False)
    agent_name = serializers.CharField(required=False, allow_null=True)
    approval_policy = serializers.ChoiceField(choices=["deny", "auto_approve"], required=False)


class TaskWrite(serializers.Serializer):
    title = serializers.CharField(max_length=200)
    prompt = serializers.CharField()
    schedule_type = serializers.ChoiceField(choices=["cron", "once"], required=False, help_text="default: from cron or run_at")
    cron = serializers.CharField(required=False, allow_null=True, help_text="five fields, e.g. '0 9 * * 1-5'")
    run_at = serializers.CharField(required=False, allow_null=True, help_text="ISO 8601; a local time is in `timezone`")
    timezone = serializers.CharField(required=False, help_text="IANA name; default UTC")
    context_mode = serializers.ChoiceField(choices=["fresh_thread_per_run", "reuse_thread"], required=False)
    thread_id = serializers.CharField(required=False, allow_null=True)
    assistant_id = serializers.CharField(required=False, allow_blank=True)
    options = TaskOptions(required=False)
    enabled = serializers.BooleanField(required=False)
    deliver_to = serializers.JSONField(required=False, allow_null=True, help_text="a channel connection's id; null: none")


class Task(serializers.Serializer):
    id = serializers.CharField()
    user_id = serializers.CharField()
    title = serializers.CharField()
    prompt = serializers.CharField()
    assistant_id = serializers.CharField(allow_blank=True)
    options = free_object()
    schedule_type = serializers.ChoiceField(choices=["cron", "once"])
    schedule_spec = free_object(help_text="{cron} or {run_at}")
    cron = serializers.CharField(allow_null=True)
    run_at = serializers.DateTimeField(allow_null=True)
    schedule_description = serializers.CharField(allow_blank=True)
    timezone = serializers.CharField()
    enabled = serializers.BooleanField()
    status = serializers.ChoiceField(choices=TASK_STATUSES)
    context_mode = serializers.CharField()
    thread_id = serializers.CharField(allow_null=True)
    overlap_policy = serializers.CharField()
    next_run_at = serializers.DateTimeField(allow_null=True)
    last_run_at = serializers.DateTimeField(allow_null=True)
    last_run_id = serializers.CharField(allow_null=True)
    last_thread_id = serializers.CharField(allow_null=True)
    last_error = serializers.CharField(allow_null=True)
    run_count = serializers.IntegerField()
    deliver_to = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)


class TaskDeleted(serializers.Serializer):
    id = serializers.CharField()
    deleted = serializers.BooleanField()


class TaskRun(serializers.Serializer):
    id = serializers.CharField()
    task_id = serializers.CharField()
    thread_id = serializers.CharField(allow_null=True)
    run_id = serializers.CharField(allow_null=True)
    scheduled_for = serializers.DateTimeField(allow_null=True)
    trigger = serializers.ChoiceField(choices=["scheduled", "manual"])
    status = serializers.ChoiceField(choices=TASK_RUN_STATUSES)
    error = serializers.CharField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)


class TaskTriggered(serializers.Serializer):
    id = serializers.CharField()
    triggered = serializers.BooleanField()
    task_run = TaskRun()


class SchedulePreviewAsk(serializers.Serializer):
    schedule_type = serializers.ChoiceField(choices=["cron", "once"], required=False)
    cron = serializers.CharField(required=False, allow_null=True)
    run_at = serializers.CharField(required=False, allow_null=True)
    timezone = serializers.CharField(required=False, allow_null=True)


class SchedulePreview(serializers.Serializer):
    schedule_type = serializers.CharField(required=False)
    cron = serializers.CharField(required=False)
    run_at = serializers.DateTimeField(required=False)
    timezone = serializers.CharField()
    description = serializers.CharField()
    next_runs = serializers.ListField(child=serializers.DateTimeField())
