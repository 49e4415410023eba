"""Executor backends: where ``execute_run(run_id)`` runs. Chosen by ``settings.RUN_EXECUTOR``.

Only the factory below knows the mode; everything else calls ``get_executor().submit``.
"""

from __future__ import annotations

from typing import Protocol

from django.conf import settings


class Executor(Protocol):
    # How long an admitted run may stay pending before recovery declares it lost.
    pending_lease_seconds: int

    def prepare(self, run_id: str) -> None:
        """At admission, before the run's first event is published."""
        ...

    def submit(self, run_id: str) -> None: ...


class EmbeddedExecutor:
    """Runs execute as asyncio tasks on this process's runs loop."""

    @property
    def pending_lease_seconds(self) -> int:
        return settings.RUN_LEASE_SECONDS

    def prepare(self, run_id: str) -> None:
        from apps.runs.runtime import get_runtime

        # This process publishes every event of the run: its own subscribers (the request that
        # started it, above all) need not wait for the events to go round through Redis.
        get_runtime().bridge.produce_here(run_id)

    def submit(self, run_id: str) -> None:
        from apps.runs.runtime import get_runtime
        from apps.runs.worker import execute_run

        runtime = get_runtime()
        if not runtime.serves_streams:
            from apps.runs.handoff import handoff_possible, run_offer

            if handoff_possible():
                run_offer(run_id)  # a server runs it where its stream can be watched
                return
        runtime.start(run_id, execute_run)


class CeleryExecutor:
    """Runs are Celery tasks; a worker process executes them on its own runs loop."""

    @property
    def pending_lease_seconds(self) -> int:
        return settings.RUN_QUEUE_TIMEOUT

    def prepare(self, run_id: str) -> None:
        """Nothing to prepare: a worker, not this process, will publish the run's events."""

    def submit(self, run_id: str) -> None:
        from apps.runs.tasks import execute_run_task
        from harness.observability.context import current_request_id

        # start_run submits with the run's request id bound: the worker's log lines carry it.
        execute_run_task.delay(run_id, request_id=current_request_id())


_EXECUTORS = {"embedded": EmbeddedExecutor, "celery": CeleryExecutor}


def get_executor() -> Executor:
    return _EXECUTORS[settings.RUN_EXECUTOR]()
