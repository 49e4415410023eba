"""Wire shapes of scheduled tasks and their runs (API_CONTRACT.md §6.1)."""

from __future__ import annotations

from apps.schedules.models import ScheduledTask, ScheduledTaskRun


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def _describe(task: ScheduledTask) -> str:
    from zoneinfo import ZoneInfo

    from apps.schedules import cron, once

    try:
        if task.is_once:
            return once.describe(task.run_at, ZoneInfo(task.timezone))
        return cron.describe(cron.parse_cron(task.cron))
    except Exception:  # a row edited by hand in the database; the raw schedule still shows
        return task.cron or _iso(task.run_at) or ""


def task_status(task: ScheduledTask, *, active: bool) -> str:
    if active:
        return "running"
    if task.is_once and task.completed_at is not None:
        return "failed" if task.last_error else "completed"
    return "enabled" if task.enabled else "paused"


def task_json(task: ScheduledTask, *, active: bool = False) -> dict:
    return {
        "id": task.pk,
        "user_id": str(task.owner_id),
        "title": task.title,
        "prompt": task.prompt,
        "assistant_id": task.assistant_id,
        "options": task.options,
        "schedule_type": task.schedule_type,
        "schedule_spec": {"run_at": _iso(task.run_at)} if task.is_once else {"cron": task.cron},
        "cron": None if task.is_once else task.cron,
        "run_at": _iso(task.run_at),
        "schedule_description": _describe(task),
        "timezone": task.timezone,
        "enabled": task.enabled,
        "status": task_status(task, active=active),
        "context_mode": task.context_mode,
        "thread_id": task.thread_id or None,
        "overlap_policy": task.overlap_policy,
        "next_run_at": _iso(task.next_run_at),
        "last_run_at": _iso(task.last_run_at),
        "last_run_id": task.last_run_id or None,
        "last_thread_id": task.last_thread_id or None,
        "last_error": task.last_error or None,
        "run_count": task.run_count,
        "deliver_to": task.deliver_to_id,
        "created_at": _iso(task.created_at),
        "completed_at": _iso(task.completed_at),
        "updated_at": _iso(task.updated_at),
    }


def task_run_json(task_run: ScheduledTaskRun) -> dict:
    return {
        "id": str(task_run.pk),
        "task_id": task_run.task_id,
        "thread_id": task_run.thread_id or None,
        "run_id": str(task_run.run_id) if task_run.run_id else None,
        "scheduled_for": _iso(task_run.scheduled_for),
        "trigger": task_run.trigger,
        "status": task_run.status,
        "error": task_run.error or None,
        "started_at": _iso(task_run.started_at),
        "finished_at": _iso(task_run.finished_at),
        "created_at": _iso(task_run.created_at),
    }
