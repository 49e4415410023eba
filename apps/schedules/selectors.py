"""Reads for scheduled tasks, always scoped to the caller (or, for the console, to one owner or all)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone

from apps.errors import InvalidRequest, NotFound
from apps.schedules.models import ScheduledTask, ScheduledTaskRun


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


def scheduled_task_health(*, owner_id: int | None, overdue_after: timedelta, limit: int = 20) -> dict:
    """The console's view of schedules: counts, failed firings in 24 h and the tasks that need
    a look (overdue or failing). ``owner_id`` None: everyone's."""
    tasks = ScheduledTask.objects.all()
    recent_errors = ScheduledTaskRun.objects.filter(status=ScheduledTaskRun.Status.ERROR)
    if owner_id is not None:
        tasks, recent_errors = tasks.filter(owner_id=owner_id), recent_errors.filter(task__owner_id=owner_id)
    now = timezone.now()
    # Aggregate names must not shadow fields ("enabled") that the filters refer to.
    counts = tasks.aggregate(n_total=Count("id"), n_enabled=Count("id", filter=Q(enabled=True)),
                             n_failing=Count("id", filter=~Q(last_error="")),
                             n_overdue=Count("id", filter=Q(enabled=True, next_run_at__lt=now - overdue_after)))
    counts = {k.removeprefix("n_"): v for k, v in counts.items()}
    problems = tasks.filter(Q(enabled=True, next_run_at__lt=now - overdue_after) | ~Q(last_error="")).select_related("owner")
    return {
        **counts, "errors_last_24h": recent_errors.filter(created_at__gte=now - timedelta(days=1)).count(),
        "problems": [{"task_id": t.pk, "title": t.title, "user": t.owner.get_username(), "enabled": t.enabled,
                      "next_run_at": t.next_run_at.isoformat() if t.next_run_at else None,
                      "last_run_at": t.last_run_at.isoformat() if t.last_run_at else None, "last_error": t.last_error}
                     for t in problems.order_by("-updated_at")[:limit]],
    }
