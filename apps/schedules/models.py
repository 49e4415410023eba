"""Scheduled tasks and their firings. The tables kept the names they had when these models
lived in the runs app (``runs_scheduledtask``, ``runs_scheduledtaskrun``): the move to this app
changed Django's state only, so no row was copied or lost (migrations/0001)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


def new_scheduled_task_id() -> str:
    return f"task-{uuid.uuid4().hex}"


class ScheduledTask(models.Model):
    """A prompt the agent runs on a cron schedule, or once at ``run_at``. Celery beat fires it
    through the django-celery-beat ``PeriodicTask`` this row owns (kept in step by
    ``apps.schedules.services``); every firing starts a run through ``start_run()``."""

    class ScheduleType(models.TextChoices):
        CRON = "cron"
        ONCE = "once"

    class ContextMode(models.TextChoices):
        FRESH_THREAD_PER_RUN = "fresh_thread_per_run"
        REUSE_THREAD = "reuse_thread"

    class OverlapPolicy(models.TextChoices):
        SKIP = "skip"

    id = models.CharField(primary_key=True, max_length=64, default=new_scheduled_task_id, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scheduled_tasks")
    title = models.CharField(max_length=200)
    prompt = models.TextField()
    assistant_id = models.CharField(max_length=128, default="lead_agent")
    # Run options passed as the run's context (model_name, thinking_enabled, agent_name, …).
    options = models.JSONField(default=dict, blank=True)
    schedule_type = models.CharField(max_length=8, choices=ScheduleType.choices, default=ScheduleType.CRON)
    cron = models.CharField(max_length=120, blank=True, default="",
                            help_text="Cron schedules: five fields, minute hour day-of-month month day-of-week.")
    run_at = models.DateTimeField(null=True, blank=True, help_text="One-off schedules: when the task runs.")
    # One-off tasks: when their firing happened; from then on the task is complete.
    completed_at = models.DateTimeField(null=True, blank=True)
    timezone = models.CharField(max_length=64, default="UTC", help_text="IANA name; the cron is read in this zone.")
    enabled = models.BooleanField(default=True)
    context_mode = models.CharField(max_length=32, choices=ContextMode.choices, default=ContextMode.FRESH_THREAD_PER_RUN)
    # reuse_thread only. A plain id, not a foreign key: a deleted thread must not delete the
    # task; the next run records the error instead.
    thread_id = models.CharField(max_length=64, blank=True, default="")
    # A channel connection the result is also posted to (the owner's Telegram, ...); a revoked
    # or deleted connection simply stops the delivery.
    deliver_to = models.ForeignKey("integrations.ChannelConnection", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="scheduled_tasks")
    overlap_policy = models.CharField(max_length=16, choices=OverlapPolicy.choices, default=OverlapPolicy.SKIP)
    periodic_task = models.OneToOneField("django_celery_beat.PeriodicTask", null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="scheduled_task", editable=False)
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_run_id = models.CharField(max_length=64, blank=True, default="")
    last_thread_id = models.CharField(max_length=64, blank=True, default="")
    last_error = models.TextField(blank=True, default="")
    run_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "runs_scheduledtask"  # the table this model had in the runs app: moved, not copied
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="sched_task_owner_created_idx")]

    def __str__(self) -> str:
        when = self.cron if self.schedule_type == self.ScheduleType.CRON else f"once at {self.run_at:%Y-%m-%d %H:%M} UTC" if self.run_at else "once"
        return f"{self.title} ({when} {self.timezone})"

    @property
    def is_once(self) -> bool:
        return self.schedule_type == self.ScheduleType.ONCE


class ScheduledTaskRun(models.Model):
    """One firing of a scheduled task: the audit trail, including firings that were skipped."""

    class Trigger(models.TextChoices):
        SCHEDULED = "scheduled"
        MANUAL = "manual"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCESS = "success"
        ERROR = "error"
        SKIPPED = "skipped"
        INTERRUPTED = "interrupted"

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    task = models.ForeignKey(ScheduledTask, on_delete=models.CASCADE, related_name="task_runs")
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="scheduled_task_runs")
    thread_id = models.CharField(max_length=64, blank=True, default="")
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    error = models.TextField(blank=True, default="")
    scheduled_for = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "runs_scheduledtaskrun"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["task", "-created_at"], name="sched_run_task_created_idx")]
        constraints = [
            # The arbiter of overlap: two racing dispatches (beat and a manual trigger, a
            # retry) cannot both hold a task, whatever process they run in. uq_runs_thread_active
            # does not cover this: a fresh thread per run means every dispatch has its own thread.
            models.UniqueConstraint(
                fields=["task"],
                condition=models.Q(status__in=["queued", "running"]),
                name="uq_scheduled_task_run_active",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} {self.trigger} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES
