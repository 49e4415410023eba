"""The task's django-celery-beat entry: one ``PeriodicTask`` per task, on a ``CrontabSchedule``
in the task's time zone. Called inside the transaction that writes the task, so the beat
entry and the task never disagree (beat's DatabaseScheduler notices the change)."""

from __future__ import annotations

import json

from django_celery_beat.models import CrontabSchedule, PeriodicTask

from apps.runs.models import ScheduledTask
from apps.runs.scheduling.cron import Cron

DISPATCH_TASK = "apps.runs.tasks.dispatch_scheduled_task"


def entry_name(task_id: str) -> str:
    return f"scheduled-task:{task_id}"


def beat_sync(task: ScheduledTask, cron: Cron) -> PeriodicTask:
    schedule = CrontabSchedule.objects.filter(**cron.as_beat_fields(), timezone=task.timezone).first()
    if schedule is None:
        schedule = CrontabSchedule.objects.create(**cron.as_beat_fields(), timezone=task.timezone)
    fields = {
        "name": entry_name(task.pk),
        "task": DISPATCH_TASK,
        "crontab": schedule,
        "interval": None,
        "clocked": None,
        "solar": None,
        "kwargs": json.dumps({"task_id": task.pk}),
        "enabled": task.enabled,
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
