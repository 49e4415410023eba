"""Celery tasks of the runs app. Thin: the work is in ``apps.runs.scheduling.dispatch``."""

from __future__ import annotations

from celery import shared_task

from apps.runs.scheduling.dispatch import dispatch


@shared_task(name="apps.runs.tasks.dispatch_scheduled_task", ignore_result=True)
def dispatch_scheduled_task(task_id: str, trigger: str = "scheduled") -> str | None:
    """Fired by beat (the task's PeriodicTask). Starts the run through ``start_run()``; the
    run then executes on this process's runs loop (see docs/scheduling.md)."""
    task_run = dispatch(task_id, trigger=trigger)
    return str(task_run.pk) if task_run is not None else None


@shared_task(name="apps.runs.tasks.execute_run", ignore_result=True)
def execute_run_task(run_id: str) -> None:
    """The Celery executor's task: execute the run on this worker's runs loop and hold the
    task slot until it has finished, so ``--concurrency`` bounds the runs a worker takes on.
    Redelivery after a worker crash is harmless: the claim only takes a pending run."""
    from apps.runs.runtime import get_runtime
    from apps.runs.worker import execute_run

    get_runtime().run_to_completion(run_id, execute_run)
