"""Celery tasks of the runs app. Thin: the work is in ``apps.runs.scheduling.dispatch``."""

from __future__ import annotations

import logging

from celery import shared_task

from apps.runs.scheduling.dispatch import dispatch

logger = logging.getLogger(__name__)


@shared_task(name="apps.runs.tasks.dispatch_scheduled_task", ignore_result=True)
def dispatch_scheduled_task(task_id: str, trigger: str = "scheduled") -> str | None:
    """Fired by beat (the task's PeriodicTask). Starts the run through ``start_run()``; the
    run then executes on this process's runs loop (see docs/scheduling.md)."""
    task_run = dispatch(task_id, trigger=trigger)
    return str(task_run.pk) if task_run is not None else None


@shared_task(name="apps.runs.tasks.execute_run", ignore_result=True)
def execute_run_task(run_id: str, request_id: str | None = None) -> None:
    """The Celery executor's task: execute the run on this worker's runs loop and hold the
    task slot until it has finished, so ``--concurrency`` bounds the runs a worker takes on.
    Redelivery after a worker crash is harmless: the claim only takes a pending run.

    ``request_id`` is the id of the request that admitted the run: the task's own log lines
    carry it (the run's lines get it from the run row)."""
    from apps.runs.runtime import get_runtime
    from apps.runs.worker import execute_run
    from harness.observability.context import run_log_context

    with run_log_context(run_id, request_id=request_id):
        logger.info("Executing run %s", run_id)
        get_runtime().run_to_completion(run_id, execute_run)
