"""Executor backends: where ``execute_run(run_id)`` runs. Chosen by ``settings.RUN_EXECUTOR``.

Only the factory below knows the mode; everything else calls ``get_executor().submit``.
"""

from __future__ import annotations

from typing import Protocol

from django.conf import settings


class Executor(Protocol):
    # How long an admitted run may stay pending before recovery declares it lost.
    pending_lease_seconds: int
    # True when this process executes the run the moment it is admitted: admission then
    # writes it running, leased to this process, and hands the worker what the claim reads.
    claims_at_admission: bool

    def prepare(self, run_id: str) -> None:
        """At admission, before the run's first event is published."""
        ...

    def submit(self, run_id: str, claimed: dict | None = None) -> None: ...


class EmbeddedExecutor:
    """Runs execute as asyncio tasks on this process's runs loop."""

    @property
    def pending_lease_seconds(self) -> int:
        return settings.RUN_LEASE_SECONDS

    @property
    def claims_at_admission(self) -> bool:
        """A server starts its runs at once (a process that serves no streams may offer them
        to the servers instead): the pending → running claim, a thread hop and two queries
        per run, is then done by admission's own insert."""
        from apps.runs.runtime import get_runtime

        return get_runtime().serves_streams

    def prepare(self, run_id: str) -> None:
        from apps.runs.runtime import get_runtime

        # This process publishes every event of the run: its own subscribers (the request that
        # started it, above all) need not wait for the events to go round through Redis.
        get_runtime().bridge.produce_here(run_id)

    def submit(self, run_id: str, claimed: dict | None = None) -> None:
        from functools import partial

        from apps.runs.runtime import get_runtime
        from apps.runs.worker import execute_run

        runtime = get_runtime()
        if claimed is not None:
            runtime.start(run_id, partial(execute_run, claimed=claimed))
            return
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

    claims_at_admission = False  # a worker claims the run when it takes the task

    def prepare(self, run_id: str) -> None:
        """Nothing to prepare: a worker, not this process, will publish the run's events."""

    def submit(self, run_id: str, claimed: dict | None = None) -> None:
        from apps.runs.tasks import execute_run_task
        from harness.observability.context import current_request_id

        # start_run submits with the run's request id bound: the worker's log lines carry it.
        execute_run_task.delay(run_id, request_id=current_request_id())


_EXECUTORS = {"embedded": EmbeddedExecutor, "celery": CeleryExecutor}


def get_executor() -> Executor:
    return _EXECUTORS[settings.RUN_EXECUTOR]()
