"""The task's django-celery-beat entry: one ``PeriodicTask`` per task, on a ``CrontabSchedule``
in the task's time zone, or for a one-off task a ``one_off`` entry on a ``ClockedSchedule`` at
its ``run_at``. Called inside the transaction that writes the task, so the beat entry and the
task never disagree (beat's DatabaseScheduler notices the change)."""

from __future__ import annotations

import json

from django_celery_beat.models import ClockedSchedule, CrontabSchedule, PeriodicTask, PeriodicTasks

from apps.schedules.models import ScheduledTask
from apps.schedules.cron import Cron

DISPATCH_TASK = "apps.runs.tasks.dispatch_scheduled_task"


def entry_name(task_id: str) -> str:
    return f"scheduled-task:{task_id}"


def _crontab(task: ScheduledTask, cron: Cron) -> CrontabSchedule:
    schedule = CrontabSchedule.objects.filter(**cron.as_beat_fields(), timezone=task.timezone).first()
    return schedule or CrontabSchedule.objects.create(**cron.as_beat_fields(), timezone=task.timezone)


def beat_sync(task: ScheduledTask, cron: Cron | None) -> PeriodicTask:
    """``cron`` is the parsed schedule of a cron task, None for a one-off task."""
    if cron is None:
        clocked = ClockedSchedule.objects.filter(clocked_time=task.run_at).first() or ClockedSchedule.objects.create(clocked_time=task.run_at)
        # Beat disables a one_off entry that has run; a re-armed task starts from zero runs.
        schedule = {"crontab": None, "clocked": clocked, "one_off": True, "total_run_count": 0, "last_run_at": None}
        enabled = task.enabled and task.completed_at is None
    else:
        schedule = {"crontab": _crontab(task, cron), "clocked": None, "one_off": False}
        enabled = task.enabled
    fields = {
        "name": entry_name(task.pk),
        "task": DISPATCH_TASK,
        **schedule,
        "interval": None,
        "solar": None,
        "kwargs": json.dumps({"task_id": task.pk}),
        "enabled": enabled,
        "description": f"DeerFlow scheduled task '{task.title}' of {task.owner}",
    }
    periodic = task.periodic_task or PeriodicTask.objects.filter(name=fields["name"]).first()
    if periodic is None:
        periodic = PeriodicTask(**fields)
    else:
        for key, value in fields.items():
            setattr(periodic, key, value)
    periodic.save()
    if task.periodic_task_id != periodic.pk:
        ScheduledTask.objects.filter(pk=task.pk).update(periodic_task=periodic)
        task.periodic_task = periodic
    return periodic


def beat_remove(task_id: str, periodic_task_id: int | None) -> None:
    entries = PeriodicTask.objects.filter(name=entry_name(task_id))
    if periodic_task_id is not None:
        entries = entries | PeriodicTask.objects.filter(pk=periodic_task_id)
    entries.delete()


def beat_disable(task_id: str) -> None:
    """A one-off task has fired: its entry must not fire again, whoever dispatched it."""
    if PeriodicTask.objects.filter(name=entry_name(task_id), enabled=True).update(enabled=False):
        PeriodicTasks.update_changed()  # a bulk update sends no signal: tell beat to reload
