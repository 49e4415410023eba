"""One firing of a scheduled task becomes one run, admitted by ``start_run()`` exactly as the
HTTP API admits one.

Overlap (policy ``skip``): the database decides. ``uq_scheduled_task_run_active`` lets one
queued/running ScheduledTaskRun exist per task, so of two racing dispatches (beat and a
manual trigger, a Celery retry) only one inserts its queued row; the other gets an
IntegrityError and records ``skipped`` (scheduled) or answers 409 (manual). The read before
the insert is only a fast path that saves the failed insert in the common case.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.errors import Conflict, DomainError, UpstreamFailed
from apps.runs.schemas import RunCreate
from apps.schedules import beat, selectors
from apps.schedules.cron import next_run, parse_cron, parse_timezone
from apps.schedules.models import ScheduledTask, ScheduledTaskRun
from harness.config.loader import get_app_config

logger = logging.getLogger(__name__)

ORIGIN = "schedule"
# A dispatch takes well under a second from its queued row to start_run(); a row with no run
# after this long belongs to a dispatch that died.
STALE_AFTER = timedelta(minutes=5)


class TaskRunConflict(Conflict):
    pass


class DispatchFailed(UpstreamFailed):
    """A manual trigger whose run could not be started (the task run records why)."""


def _skip(task: ScheduledTask, trigger: str, scheduled_for, reason: str) -> ScheduledTaskRun:
    # Created directly as terminal 'skipped', never as a transient 'queued': it must not
    # occupy the active slot the earlier run still holds.
    now = timezone.now()
    logger.info("Scheduled task %s: %s firing skipped (%s)", task.pk, trigger, reason)
    return ScheduledTaskRun.objects.create(task=task, trigger=trigger, status=ScheduledTaskRun.Status.SKIPPED,
                                           error=reason, scheduled_for=scheduled_for, finished_at=now)


def _run_request(task: ScheduledTask, task_run: ScheduledTaskRun) -> tuple[str, RunCreate]:
    """(thread id, the run request) — the same request an API client would send."""
    if task.context_mode == ScheduledTask.ContextMode.REUSE_THREAD:
        thread_id = task.thread_id
    else:
        thread_id = str(uuid.uuid4())
    context = {**(task.options or {}), "non_interactive": True}
    request = RunCreate(
        assistant_id=task.assistant_id,
        input={"messages": [{"role": "user", "content": task.prompt}]},
        context=context,
        metadata={"origin": ORIGIN, "scheduled_task_id": task.pk, "scheduled_task_run_id": str(task_run.pk),
                  "trigger": task_run.trigger, **({"deliver_to": task.deliver_to_id} if task.deliver_to_id else {})},
        # A fresh thread is created by the admission itself; a reused one must still exist.
        if_not_exists="create" if task.context_mode == ScheduledTask.ContextMode.FRESH_THREAD_PER_RUN else None,
        multitask_strategy="reject",
        # What the chat page asks for, so a user who opens the thread sees it stream.
        stream_mode=["messages-tuple", "values", "updates", "custom"],
    )
    return thread_id, request


def dispatch(task_id: str, *, trigger: str = ScheduledTaskRun.Trigger.SCHEDULED, scheduled_for=None) -> ScheduledTaskRun | None:
    """Start one run of the task, or record why not. None when there is nothing to do (the
    task was deleted, or disabled after beat read its schedule).

    Manual triggers raise ``TaskRunConflict`` (409) while a run is active and
    ``DispatchFailed`` (502) when the run cannot be started; scheduled firings record both
    outcomes as rows instead, since no one is waiting for an answer.
    """
    from apps.runs.services import start_run

    manual = trigger == ScheduledTaskRun.Trigger.MANUAL
    task = ScheduledTask.objects.select_related("owner").filter(pk=task_id).first()
    if task is None or (not manual and not task.enabled):
        return None
    scheduled_for = scheduled_for or timezone.now()
    if not manual and not get_app_config().scheduler.enabled:
        return _skip(task, trigger, scheduled_for, "the scheduler is turned off (scheduler.enabled: false in config.yaml)")
    if task.is_once and not manual:
        # A one-off task's firing is used up here, whatever becomes of it: from now on the
        # task is complete. The update is the arbiter between two firings (a beat retry).
        consumed = ScheduledTask.objects.filter(pk=task.pk, completed_at__isnull=True).update(completed_at=scheduled_for, next_run_at=None)
        if not consumed:
            return None
        beat.beat_disable(task.pk)
        task.completed_at, task.next_run_at = scheduled_for, None
    _settle_stale(task)

    if selectors.task_has_active_run(task.pk):
        if manual:
            raise TaskRunConflict(f"Scheduled task {task.pk} already has an active run")
        return _skip(task, trigger, scheduled_for, "the previous run is still active")
    try:
        with transaction.atomic():
            task_run = ScheduledTaskRun.objects.create(task=task, trigger=trigger, status=ScheduledTaskRun.Status.QUEUED,
                                                       scheduled_for=scheduled_for)
    except IntegrityError:
        # Another dispatch inserted its queued row between our read and our insert.
        if manual:
            raise TaskRunConflict(f"Scheduled task {task.pk} already has an active run") from None
        return _skip(task, trigger, scheduled_for, "another dispatch of this task is active")

    now = timezone.now()
    thread_id, request = _run_request(task, task_run)
    try:
        admitted = start_run(user=task.owner, thread_id=thread_id, request=request)
    except Exception as exc:
        # e.g. the task's agent or reused thread was deleted, or that thread is busy. The task
        # stays listed; its history says why this firing did not run.
        detail = exc.detail if isinstance(exc, DomainError) else f"{type(exc).__name__}: {exc}"
        error = f"The run could not be started: {detail}"
        ScheduledTaskRun.objects.filter(pk=task_run.pk).update(status=ScheduledTaskRun.Status.ERROR, error=error,
                                                               thread_id=thread_id, finished_at=now)
        _record_on_task(task, now=now, run_id="", thread_id=thread_id, error=error)
        task_run.refresh_from_db()
        logger.warning("Scheduled task %s could not start a run: %s", task.pk, detail, exc_info=not isinstance(exc, DomainError))
        if not isinstance(exc, DomainError):
            raise  # unexpected (the database went away): let Celery log it; the row is settled
        if manual:
            raise DispatchFailed(error) from None
        return task_run

    run = admitted.run
    # The run may already have finished (and settled this row through the hook): only a row
    # still queued becomes running.
    ScheduledTaskRun.objects.filter(pk=task_run.pk).update(run=run, thread_id=admitted.thread.pk)
    ScheduledTaskRun.objects.filter(pk=task_run.pk, status=ScheduledTaskRun.Status.QUEUED).update(
        status=ScheduledTaskRun.Status.RUNNING, started_at=now)
    _record_on_task(task, now=now, run_id=str(run.pk), thread_id=admitted.thread.pk, error=None)
    task_run.refresh_from_db()
    return task_run


def _settle_stale(task: ScheduledTask) -> None:
    """Free the task's slot from a row that can no longer finish: still active with no run
    after STALE_AFTER (the dispatching process died between its insert and start_run(), or
    the run was deleted). Without this one crash would make every later firing a skip."""
    cutoff = timezone.now() - STALE_AFTER
    stale = ScheduledTaskRun.objects.filter(task=task, status__in=ScheduledTaskRun.ACTIVE_STATUSES, run__isnull=True, created_at__lt=cutoff)
    if stale.update(status=ScheduledTaskRun.Status.ERROR, finished_at=timezone.now(),
                    error="The dispatch did not complete (its process stopped before the run started)."):
        logger.warning("Scheduled task %s: settled a stale dispatch", task.pk)


def _record_on_task(task: ScheduledTask, *, now, run_id: str, thread_id: str, error: str | None) -> None:
    from django.db.models import F

    updates = {"last_run_at": now, "last_run_id": run_id, "last_thread_id": thread_id, "run_count": F("run_count") + 1}
    if error is not None:
        updates["last_error"] = error
    if task.enabled and not task.is_once:
        updates["next_run_at"] = next_run(parse_cron(task.cron), parse_timezone(task.timezone), after=now)
    ScheduledTask.objects.filter(pk=task.pk).update(**updates)
