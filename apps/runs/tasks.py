"""The Celery executor's task (``RUN_EXECUTOR=celery``). Scheduled tasks' beat task is
``apps.schedules.tasks``."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


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
