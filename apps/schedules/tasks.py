"""The beat task of scheduled tasks. Thin: the work is in ``dispatch``.

Its registered name is the one beat's ``PeriodicTask`` rows store, so it stays as it was
when the task lived in ``apps/runs/tasks.py``.
"""

from __future__ import annotations

from celery import shared_task

from apps.schedules.dispatch import dispatch


@shared_task(name="apps.runs.tasks.dispatch_scheduled_task", ignore_result=True)
def dispatch_scheduled_task(task_id: str, trigger: str = "scheduled") -> str | None:
    """Fired by beat (the task's PeriodicTask). Starts the run through ``start_run()``; the
    run then executes on this process's runs loop (see docs/scheduling.md)."""
    task_run = dispatch(task_id, trigger=trigger)
    return str(task_run.pk) if task_run is not None else None
