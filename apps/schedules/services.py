"""Writes for scheduled tasks. Every write that changes when or whether a task fires also
writes its beat entry, in the same transaction (``beat.beat_sync``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.agents.selectors import run_agent_for_user
from apps.channels.connections import connection_id_for_user
from apps.channels.outbox import delivery_enqueue
from apps.errors import InvalidRequest, NotFound
from apps.runs import graphs
from apps.runs.lifecycle import RunStatus, SettledRun
from apps.schedules import beat, once
from apps.schedules.cron import next_run, parse_cron, parse_timezone
from apps.schedules.models import ScheduledTask, ScheduledTaskRun
from apps.threads.selectors import thread_get_for_user
from harness.config.loader import get_app_config

# Run options a task may carry into its runs' context. Anything else is refused, so a typo
# is a 422 rather than an option silently ignored at 3 a.m.
# approval_policy: what a tool call that needs approval does when nobody is there to give it.
OPTION_KEYS = frozenset({"model_name", "thinking_enabled", "is_plan_mode", "subagent_enabled", "agent_name", "approval_policy"})
APPROVAL_POLICIES = ("deny", "auto_approve")
FIELDS = ("title", "prompt", "schedule_type", "cron", "run_at", "timezone", "context_mode", "thread_id", "assistant_id", "options", "enabled",
          "deliver_to")


def _clean_title(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest("title: a title is required")
    if len(value.strip()) > 200:
        raise InvalidRequest("title: at most 200 characters")
    return value.strip()


def _clean_prompt(value: Any) -> str:
    limit = settings.SCHEDULED_TASK_MAX_PROMPT_CHARS
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest("prompt: a prompt is required")
    if len(value) > limit:
        raise InvalidRequest(f"prompt: at most {limit} characters (got {len(value)})")
    return value


def _clean_options(value: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidRequest("options: must be an object")
    unknown = sorted(set(value) - OPTION_KEYS)
    if unknown:
        raise InvalidRequest(f"options: unknown option(s) {', '.join(unknown)}; allowed: {', '.join(sorted(OPTION_KEYS))}")
    model = value.get("model_name")
    if model is not None:
        names = [m.name for m in get_app_config().models]
        if model not in names:
            raise InvalidRequest(f"options.model_name: unknown model '{model}'; configured: {', '.join(names) or 'none'}")
    if "approval_policy" in value and value["approval_policy"] not in APPROVAL_POLICIES:
        raise InvalidRequest(f"options.approval_policy: must be one of {', '.join(APPROVAL_POLICIES)}")
    for flag in ("thinking_enabled", "is_plan_mode", "subagent_enabled"):
        if flag in value and not isinstance(value[flag], bool):
            raise InvalidRequest(f"options.{flag}: must be true or false")
    return {k: v for k, v in value.items() if v is not None}


def _normalize(data: Any) -> dict:
    """The API's shapes into model fields. ``schedule_type`` + ``schedule_spec`` (``{cron}`` or
    ``{run_at}``) are the wire contract's spelling; ``cron`` and ``run_at`` are accepted directly."""
    if not isinstance(data, dict):
        raise InvalidRequest("the request must be a JSON object")
    data = dict(data)
    schedule_type = data.get("schedule_type")
    if schedule_type is not None and schedule_type not in ScheduledTask.ScheduleType.values:
        raise InvalidRequest("schedule_type: must be 'cron' or 'once'")
    spec = data.pop("schedule_spec", None)
    if spec is not None:
        if not isinstance(spec, dict) or not ({"cron", "run_at"} & set(spec)):
            raise InvalidRequest("schedule_spec: must be an object with 'cron' (cron tasks) or 'run_at' (one-off tasks)")
        for key in ("cron", "run_at"):
            if key in spec:
                data.setdefault(key, spec[key])
    if schedule_type is None and ("cron" in data) != ("run_at" in data):
        data["schedule_type"] = "cron" if "cron" in data else "once"
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: unknown field")
    return data


def _assistant_exists(user, assistant_id: str) -> bool:
    try:
        run_agent_for_user(user=user, assistant_id=assistant_id)
    except NotFound:
        return False
    return True


def _apply(task: ScheduledTask, data: dict, *, user) -> None:
    if "title" in data:
        task.title = _clean_title(data["title"])
    if "prompt" in data:
        task.prompt = _clean_prompt(data["prompt"])
    if "schedule_type" in data:
        task.schedule_type = data["schedule_type"]
    if "timezone" in data:
        task.timezone = parse_timezone(data["timezone"]).key
    if task.is_once:
        if "run_at" in data or task.run_at is None:
            task.run_at = once.parse_run_at(data.get("run_at"), parse_timezone(task.timezone))
        task.cron = ""
    else:
        if "cron" in data or not task.cron:
            task.cron = parse_cron(data.get("cron")).expression
        task.run_at = None
    if "assistant_id" in data:
        if not isinstance(data["assistant_id"], str) or not _assistant_exists(user, data["assistant_id"]):
            raise InvalidRequest(f"assistant_id: unknown assistant {data['assistant_id']!r}")
        task.assistant_id = data["assistant_id"] or graphs.LEAD_AGENT
    if "options" in data:
        task.options = _clean_options(data["options"])
    if "enabled" in data:
        if not isinstance(data["enabled"], bool):
            raise InvalidRequest("enabled: must be true or false")
        task.enabled = data["enabled"]
    if "deliver_to" in data:
        task.deliver_to_id = None if data["deliver_to"] is None else connection_id_for_user(user=user, value=data["deliver_to"])
    if "context_mode" in data:
        if data["context_mode"] not in ScheduledTask.ContextMode.values:
            raise InvalidRequest(f"context_mode: must be one of {', '.join(ScheduledTask.ContextMode.values)}")
        task.context_mode = data["context_mode"]
    if "thread_id" in data:
        task.thread_id = data["thread_id"] or ""
    if task.context_mode == ScheduledTask.ContextMode.REUSE_THREAD:
        if not task.thread_id:
            raise InvalidRequest("thread_id: required when context_mode is reuse_thread")
        thread_get_for_user(user=user, thread_id=task.thread_id)  # 404 for a missing or another user's thread
    elif task.thread_id:
        raise InvalidRequest("thread_id: only used when context_mode is reuse_thread")


def _refresh_next_run(task: ScheduledTask, *, now: dt.datetime | None = None) -> None:
    if not task.enabled:
        task.next_run_at = None
    elif task.is_once:
        task.next_run_at = None if task.completed_at else task.run_at
    else:
        task.next_run_at = next_run(parse_cron(task.cron), parse_timezone(task.timezone), after=now or timezone.now())


def _check_interval(cron, zone, *, now: dt.datetime) -> None:
    """Refuse a cron whose firings come closer together than ``scheduler.min_interval_minutes``
    (over its next 60 firings, which covers every hourly pattern)."""
    from apps.schedules.cron import next_runs

    least = get_app_config().scheduler.min_interval_minutes
    if least <= 1:
        return  # a cron cannot fire more often than once a minute
    runs = next_runs(cron, zone, after=now, count=60)
    gap = min(((b - a).total_seconds() for a, b in zip(runs, runs[1:], strict=False)), default=None)
    if gap is not None and gap < least * 60:
        raise InvalidRequest(f"cron: {cron.expression!r} fires every {int(gap // 60)} minute(s); this server allows at most one run "
                             f"every {least} minutes (scheduler.min_interval_minutes)")


def _save(task: ScheduledTask, *, rearm: bool = False) -> ScheduledTask:
    """Validate the schedule and write the task with its beat entry. ``rearm``: the schedule
    was changed or the task resumed, so a one-off task must have a time still to come."""
    now = timezone.now()
    if task.is_once:
        if rearm or (task.completed_at is None and task._state.adding):
            once.require_future(task.run_at, now=now)
            task.completed_at = None
        cron = None
    else:
        cron = parse_cron(task.cron)
        zone = parse_timezone(task.timezone)
        if next_run(cron, zone, after=now) is None:
            raise InvalidRequest(f"cron: {task.cron!r} never fires")
        _check_interval(cron, zone, now=now)
        task.completed_at = None
    _refresh_next_run(task, now=now)
    with transaction.atomic():
        task.save()
        beat.beat_sync(task, cron)
    return task


def scheduled_task_create(*, user, data: Any) -> ScheduledTask:
    data = _normalize(data)
    # A one-off task's missing time is reported by _apply, under the wire's name for it.
    required_fields = ("title", "prompt") if data.get("schedule_type") == ScheduledTask.ScheduleType.ONCE else ("title", "prompt", "cron")
    for required in required_fields:
        if required not in data:
            raise InvalidRequest(f"{required}: this field is required")
    data.setdefault("timezone", get_app_config().scheduler.default_timezone)
    task = ScheduledTask(owner=user)
    _apply(task, data, user=user)
    return _save(task)


def _schedule(task: ScheduledTask) -> tuple:
    return task.schedule_type, task.cron, task.run_at, task.timezone


def scheduled_task_update(*, task: ScheduledTask, data: Any) -> ScheduledTask:
    data = _normalize(data)
    before = _schedule(task)
    _apply(task, data, user=task.owner)
    # A new schedule re-arms a one-off task that has run (API_CONTRACT.md §6.1); the same one
    # sent back with other edits (the page sends the whole form) leaves it complete.
    return _save(task, rearm=_schedule(task) != before)


def scheduled_task_set_enabled(*, task: ScheduledTask, enabled: bool) -> ScheduledTask:
    # Resuming a one-off task that already ran needs a new time: the 422 says so.
    rearm = enabled and task.is_once and (task.completed_at is not None or not task.enabled)
    task.enabled = enabled
    return _save(task, rearm=rearm)


def scheduled_task_delete(*, task: ScheduledTask) -> None:
    # The beat entry goes with the row (also when a user deletion cascades): see signals.py.
    task.delete()


# -- the run path's hook -----------------------------------------------------------------

_RUN_TO_TASK_RUN = {
    RunStatus.SUCCESS: ScheduledTaskRun.Status.SUCCESS,
    RunStatus.ERROR: ScheduledTaskRun.Status.ERROR,
    RunStatus.TIMEOUT: ScheduledTaskRun.Status.ERROR,
    RunStatus.INTERRUPTED: ScheduledTaskRun.Status.INTERRUPTED,
}


def scheduled_run_settled(run: SettledRun) -> None:
    """A run has finished: its ScheduledTaskRun row (if it has one) follows its status.

    Registered on the engine's ``settled`` point, so it runs inside the transaction that
    settles every run (worker, cancellation of a run no process holds, orphan recovery). The
    row is found through the run's metadata, which ``start_run`` stored before the run could
    start, so a run that finishes before the dispatcher links it is still seen.
    """
    task_run_id = run.metadata.get("scheduled_task_run_id")
    status = _RUN_TO_TASK_RUN.get(run.status)
    if not task_run_id or status is None:
        return
    updated = ScheduledTaskRun.objects.filter(pk=task_run_id, status__in=ScheduledTaskRun.ACTIVE_STATUSES).update(
        status=status, error=run.error or "", finished_at=run.finished_at, run_id=run.run_id,
    )
    if updated:
        task_id = run.metadata.get("scheduled_task_id")
        ScheduledTask.objects.filter(pk=task_id).update(last_error=(run.error or "") if status == ScheduledTaskRun.Status.ERROR else "")
        if run.metadata.get("deliver_to"):
            title = ScheduledTask.objects.filter(pk=task_id).values_list("title", flat=True).first() or ""
            delivery_enqueue(run_id=run.run_id, connection_id=run.metadata["deliver_to"], task_id=task_id, title=title)
