"""What an operator acts on: runs going now, runs that failed, the queue, schedule health,
and the answers users rated. Reads only; the acts (cancel, pause) go through the owning
app's services."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone

from apps.console.periods import Period, Scope
from apps.console.reports import FAILED, run_row
from apps.errors import InvalidRequest
from apps.runs.lifecycle import ACTIVE_RUN_STATUSES, RunStatus
from apps.runs.selectors import runs_between
from apps.schedules.selectors import scheduled_task_health
from apps.threads.selectors import feedback_between

# A running run whose lease has lapsed by more than this is reported as stuck.
STUCK_AFTER = timedelta(minutes=2)


def active_runs(*, scope: Scope, limit: int = 50) -> list[dict]:
    now = timezone.now()
    qs = scope.filter(runs_between(statuses=ACTIVE_RUN_STATUSES)).select_related("thread", "owner").order_by("created_at")
    rows = []
    for run in qs[:limit]:
        row = run_row(run)
        lapsed = run.status == RunStatus.RUNNING and (run.lease_expires_at is None or run.lease_expires_at < now - STUCK_AFTER)
        row.update(age_seconds=int((now - run.created_at).total_seconds()), stuck=lapsed,
                   cancel_requested=run.cancel_requested_at is not None)
        rows.append(row)
    return rows


def failing_runs(*, scope: Scope, period: Period, limit: int = 20) -> list[dict]:
    qs = scope.filter(runs_between(start=period.start, end=period.end, statuses=FAILED))
    return [run_row(r) for r in qs.select_related("thread", "owner").order_by("-created_at")[:limit]]


def queue_depth() -> dict:
    """Runs admitted but not yet claimed by a worker, and runs executing now."""
    counts = runs_between(statuses=ACTIVE_RUN_STATUSES).aggregate(
        pending=Count("id", filter=Q(status=RunStatus.PENDING)), running=Count("id", filter=Q(status=RunStatus.RUNNING)))
    oldest = runs_between(statuses=[RunStatus.PENDING]).order_by("created_at").values_list("created_at", flat=True).first()
    return {**counts, "oldest_pending_seconds": int((timezone.now() - oldest).total_seconds()) if oldest else None}


def schedule_health(*, scope: Scope, limit: int = 20) -> dict:
    return scheduled_task_health(owner_id=scope.owner_id, overdue_after=STUCK_AFTER, limit=limit)


def feedback_rows(*, scope: Scope, period: Period, rating: str | None = None, has_comment: str | None = None,
                  limit: int = 100, offset: int = 0) -> dict:
    if not (isinstance(limit, int) and 1 <= limit <= 5000):
        raise InvalidRequest("limit must be an integer from 1 to 5000")
    if not (isinstance(offset, int) and offset >= 0):
        raise InvalidRequest("offset must be a non-negative integer")
    qs = scope.filter(feedback_between(start=period.start, end=period.end))
    if rating not in (None, ""):
        if rating not in ("1", "-1", "up", "down"):
            raise InvalidRequest(f"rating must be 1, -1, up or down, got {rating!r}")
        qs = qs.filter(rating=1 if rating in ("1", "up") else -1)
    if has_comment not in (None, ""):
        if has_comment not in ("true", "false"):
            raise InvalidRequest(f"has_comment must be true or false, got {has_comment!r}")
        qs = qs.exclude(comment="") if has_comment == "true" else qs.filter(comment="")
    counts = qs.aggregate(total=Count("id"), up=Count("id", filter=Q(rating=1)), down=Count("id", filter=Q(rating=-1)))
    page = qs.select_related("owner", "thread", "run").order_by("-created_at")[offset : offset + limit]
    return {
        "period": period.as_dict(), "user": scope.label, **counts, "limit": limit, "offset": offset,
        "feedback": [{"feedback_id": f.pk, "run_id": str(f.run_id), "thread_id": f.thread_id, "thread_title": f.thread.title,
                      "user": f.owner.get_username(), "message_id": f.message_id, "rating": f.rating, "comment": f.comment,
                      "model_name": f.run.model_name, "created_at": f.created_at.isoformat()} for f in page],
    }
