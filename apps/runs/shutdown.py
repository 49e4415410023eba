"""What a process that executes runs does when it is asked to stop (SIGTERM to the server).

1. ``drain_begin``: from now on this process admits no run (``start_run`` answers 503 with a
   ``Retry-After``; another process behind the load balancer takes the retry) and says it is
   not ready (``/api/health/ready``), so the load balancer or Kubernetes stops sending it work.
2. ``drain``: the runs it executes are given up to ``SHUTDOWN_GRACE_SECONDS`` to finish, as
   they would have anyway: their streams go on meanwhile.
3. What is still running then is handed to recovery here, before the process exits: the
   worker stops without settling (the ``HANDOFF`` cancel), the lease is given up, and
   ``recover_orphans`` settles the run as a crash would be settled (an ``error``, what the
   checkpoint holds journaled, ``error`` and ``end`` on its stream, the thread free). No run
   is left ``running`` without a live lease for another process's sweep to find later.

The server then closes the streams it still holds with a reconnect hint
(deerflow_site/server/daphne_server.py): a stream of a run another process executes goes on
on another server with ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.errors import ServerDraining
from apps.runs.models import Run
from apps.runs.recovery import recover_orphans
from apps.runs.runtime import HANDOFF, process_id, RunsRuntime

logger = logging.getLogger(__name__)

# What a refused client is told to wait before trying again (by then the load balancer has
# taken this process out, and the retry lands on another).
RETRY_AFTER_SECONDS = 5
# How long a stopped worker may take to let go of its run before recovery takes it anyway.
HANDOFF_WAIT_SECONDS = 10

_draining = threading.Event()


def draining() -> bool:
    return _draining.is_set()


def drain_begin() -> None:
    if not _draining.is_set():
        _draining.set()
        logger.warning("Shutting down: no new runs are admitted here; running runs get %ss to finish", settings.SHUTDOWN_GRACE_SECONDS)


def check_admitting() -> None:
    """At admission: refuse while this process shuts down."""
    if _draining.is_set():
        raise ServerDraining("This server is shutting down and takes no new runs; retry (another server will take it).",
                             retry_after=RETRY_AFTER_SECONDS)


def _wait_all(runtime: RunsRuntime, grace: float) -> None:
    async def _wait() -> None:
        entries = list(runtime.active.values())
        if entries:
            await asyncio.wait([asyncio.ensure_future(e.done.wait()) for e in entries], timeout=grace)

    runtime.call(_wait, timeout=grace + 5)


def _stop_workers(runtime: RunsRuntime, run_ids: list[str]) -> None:
    async def _stop() -> None:
        for run_id in run_ids:
            runtime.cancel_here(run_id, HANDOFF)
        for run_id in run_ids:
            await runtime.wait_done(run_id, HANDOFF_WAIT_SECONDS)

    runtime.call(_stop, timeout=HANDOFF_WAIT_SECONDS * max(1, len(run_ids)) + 5)


def drain(runtime: RunsRuntime, *, grace: float | None = None) -> list[str]:
    """Blocking (call it from a thread that is not the runs loop): stop admitting, wait up to
    ``grace`` seconds for this process's runs, hand the rest to recovery. Returns the ids
    handed over."""
    drain_begin()
    grace = settings.SHUTDOWN_GRACE_SECONDS if grace is None else grace
    if runtime.active:
        _wait_all(runtime, grace)
    # A run already settling is writing its outcome: it is let finish (its lease still holds).
    left = [run_id for run_id, entry in list(runtime.active.items()) if not entry.settling]
    if not left:
        return []
    logger.warning("Shutting down: %d run(s) still running after %ss go to recovery", len(left), grace)
    _stop_workers(runtime, left)
    # Given up, so that recovery (whose settle requires a lapsed lease) takes them now.
    Run.slots.filter(pk__in=left, lease_owner=process_id(), status__in=Run.ACTIVE_STATUSES).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1))
    handed = []
    for run_id in left:
        handed += recover_orphans(runtime, run_id=run_id)
    return handed
