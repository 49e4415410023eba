"""Reads for scheduled tasks, always scoped to the caller."""

from __future__ import annotations

from apps.runs.models import ScheduledTask, ScheduledTaskRun
from deerflow_site.errors import InvalidRequest, NotFound


def scheduled_task_list(*, user, thread_id: str | None = None):
    qs = ScheduledTask.objects.filter(owner_id=user.pk)
    if thread_id is not None:
        qs = qs.filter(thread_id=thread_id)
    return qs.order_by("-created_at")


def scheduled_task_get_for_user(*, user, task_id: str) -> ScheduledTask:
    task = ScheduledTask.objects.filter(pk=task_id, owner_id=user.pk).first()
    if task is None:
        raise NotFound(f"Scheduled task {task_id} not found")  # also another user's: never reveal it
    return task


def task_has_active_run(task_id: str) -> bool:
    return ScheduledTaskRun.objects.filter(task_id=task_id, status__in=ScheduledTaskRun.ACTIVE_STATUSES).exists()


def active_task_ids(task_ids) -> set[str]:
    return set(ScheduledTaskRun.objects.filter(task_id__in=list(task_ids), status__in=ScheduledTaskRun.ACTIVE_STATUSES)
               .values_list("task_id", flat=True))


def task_run_list(*, task: ScheduledTask, limit: int = 50, offset: int = 0):
    if not (1 <= limit <= 200) or offset < 0:
        raise InvalidRequest("limit must be 1 to 200 and offset non-negative")
    return task.task_runs.order_by("-created_at")[offset : offset + limit]
