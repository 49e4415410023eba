"""The run engine's hooks for workspace changes and delivery receipts.

``before_run`` snapshots the thread's ``workspace`` and ``outputs`` on a worker thread and keeps
it for the run; ``before_settle`` snapshots again, and the ``workspace_changes`` event (when
anything changed) and the ``run.delivery`` receipt go into the journal with the run's final
row. A run that would succeed but changed outputs it never presented settles as an error.

A run settled without passing there (cancelled before it started or while it was queued, or
by the canceller once its process was gone; an orphan settled by recovery) gets, through the
``settled`` hook in its final row's transaction, the receipt of a run that delivered nothing.

Both hooks run in the process executing the run, so the pre-run snapshot needs no storage
beyond this process's memory. A snapshot that cannot be taken (a disk error) costs the run its
change record, never the run itself.
"""

from __future__ import annotations

import asyncio
import logging

from apps.runs.journal import JournalEvent, journal_insert
from apps.runs.lifecycle import RunOutcome, RunStart, RunStatus, SettledRun, Settling
from apps.runs.selectors import run_has_event
from harness.workspace_changes import delivery, recorder
from harness.workspace_changes.types import EVENT_CATEGORY, EVENT_TYPE, METADATA_KEY, Snapshot

logger = logging.getLogger(__name__)

# Pre-run snapshots of the runs in flight here, by run id. A run that dies before it settles
# leaves its entry; the oldest go once there are more than any process runs at once.
_pending: dict[str, Snapshot] = {}
_PENDING_MAX = 256
cache = recorder.SnapshotCache()


def _key(meta: dict) -> tuple[str, str]:
    return str(meta["owner_id"]), str(meta["thread_id"])


async def before_run(start: RunStart) -> None:
    run_id = str((start.config.get("configurable") or {}).get("run_id") or "")
    if not run_id:
        return
    key = _key(start.meta)
    try:
        roots = recorder.thread_roots(*key)
        snap = await asyncio.to_thread(recorder.snapshot_before, roots, cache=cache, key=key)
    except Exception:
        logger.warning("Could not snapshot the workspace before run %s", run_id, exc_info=True)
        return
    while len(_pending) >= _PENDING_MAX:
        _pending.pop(next(iter(_pending)))
    _pending[run_id] = snap


async def before_settle(outcome: RunOutcome) -> Settling:
    before = _pending.pop(outcome.run_id, None)
    if before is None:
        return Settling(events=[])
    values = outcome.values if isinstance(outcome.values, dict) else {}
    presented = delivery.presented_in_turn(list(values.get("messages") or []))
    key = _key(outcome.meta)
    try:
        payload, receipt = await asyncio.to_thread(recorder.settle, recorder.thread_roots(*key), before,
                                                   presented=presented, cache=cache, key=key)
    except Exception:
        logger.warning("Could not record the workspace changes of run %s", outcome.run_id, exc_info=True)
        return Settling(events=[])
    events = []
    if payload is not None:
        events.append(JournalEvent(EVENT_TYPE, EVENT_CATEGORY, recorder.describe(payload), {METADATA_KEY: payload}))
    events.append(JournalEvent(delivery.EVENT_TYPE, delivery.EVENT_CATEGORY, receipt, {}))
    return Settling(events=events, error=(delivery.delivery_error(receipt) or "") if outcome.succeeded else "")


def settled(run: SettledRun) -> None:
    """Inside the final row's transaction: every finished run has its receipt, also one that
    never reached ``before_settle`` (a success always does, so it costs no query)."""
    if run.status == RunStatus.SUCCESS or run_has_event(run_id=run.run_id, event_type=delivery.EVENT_TYPE):
        return
    receipt = delivery.receipt(presented=[], produced=[])
    journal_insert(thread_id=run.thread_id, run_id=run.run_id,
                   events=[JournalEvent(delivery.EVENT_TYPE, delivery.EVENT_CATEGORY, receipt, {})])
