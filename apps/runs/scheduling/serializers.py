"""Wire shapes of scheduled tasks and their runs (API_CONTRACT.md §6.1)."""

from __future__ import annotations

from apps.runs.models import ScheduledTask, ScheduledTaskRun


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def _describe(expression: str) -> str:
    from apps.runs.scheduling.cron import describe, parse_cron

    try:
        return describe(parse_cron(expression))
    except Exception:  # a row edited by hand in the database; the raw expression still shows
        return expression


def task_status(task: ScheduledTask, *, active: bool) -> str:
    if active:
        return "running"
    return "enabled" if task.enabled else "paused"


def task_json(task: ScheduledTask, *, active: bool = False) -> dict:
    return {
        "id": task.pk,
        "user_id": str(task.owner_id),
        "title": task.title,
        "prompt": task.prompt,
        "assistant_id": task.assistant_id,
        "options": task.options,
        "schedule_type": "cron",
        "schedule_spec": {"cron": task.cron},
        "cron": task.cron,
        "schedule_description": _describe(task.cron),
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
        "created_at": _iso(task.created_at),
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
