"""Settling runs whose process died: at startup, whenever the next lease lapses, and when a
request finds its thread held by such a run.

A worker renews its run's lease every third of ``RUN_LEASE_SECONDS``, so only runs whose
process stopped renewing are touched; runs of other live processes are left alone. The
sweep does not wait for traffic: every process that serves the API runs it on its runs loop
from startup, and sleeps until the earliest lease of an active run is due (at most
SWEEP_SECONDS), so a dead process's thread is free about one lease after its last renewal.

Settling an orphan also reconciles the journal with the checkpoint: what the run's graph
had checkpointed but the journal had not yet written (the user's prompt, above all, when the
process died in its first second) is journaled as the run's events, in the same transaction
that frees the thread, so the next run's events cannot come before them.

A thread reservation (``reservations.py``) whose process died is recovered the same way, by
deleting its row: it recorded nothing, and it only held the thread.

The runtime is handed in: recovery reads the checkpointer and ends streams through it, and
is itself started by it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from typing import Any

from channels.db import DatabaseSyncToAsync
from django.db import DatabaseError
from django.db.models import Min, Q
from django.utils import timezone
from langchain_core.messages import HumanMessage, convert_to_messages

from apps.runs.journal import JournalEvent, RunProgress, journaled_message_ids, message_events
from apps.runs.models import Run
from apps.runs.settle import run_settle
from apps.threads.services import ThreadStatus

from harness.runtime.checkpoint_state import materialized_values
from harness.runtime.serialize import to_jsonable

logger = logging.getLogger(__name__)

SWEEP_SECONDS = 15
# The sweep never spins: after a pass it sleeps at least this long.
MIN_SLEEP_SECONDS = 0.5
ORPHAN_ERROR = "The process executing this run stopped before it finished."
# The stream's `error` event, shaped as a worker's (its name is the journal's error_type, so a
# stream the bridge no longer holds says the same: selectors.run_failure).
ORPHAN_ERROR_EVENT = {"error": "orphan_recovered", "message": ORPHAN_ERROR, "name": "orphan_recovered"}

# Set once the first sweep of this process is over (startup waits for it).
_first_sweep = threading.Event()


def _lapsed(now) -> Q:
    return Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True)


def _checkpoint_messages(runtime: Any, thread_id: str) -> list:
    """The thread's messages as its checkpoint has them; [] when it has none or cannot be read
    (the run is settled regardless: a lost message is better than a stuck thread)."""

    async def _read() -> list:
        from apps.runs.graphs import state_reader

        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        saver = await runtime.checkpointer()
        head = await saver.aget_tuple(config)
        if head is None:
            return []
        stored = (head.checkpoint.get("channel_values") or {}).get("messages")
        if isinstance(stored, list):  # a full checkpoint holds the whole list
            return list(stored)
        # A delta checkpoint: replayed by a state-only graph (state_reader reads config.yaml,
        # which is file IO: not on the loop).
        reader = await asyncio.to_thread(state_reader, saver)
        values = await materialized_values(reader, config)
        return list((values or {}).get("messages") or [])

    try:
        return runtime.call(_read, timeout=30)
    except Exception:
        logger.warning("Could not read the checkpoint of thread %s to reconcile its journal", thread_id, exc_info=True)
        return []


def _unjournaled_input(run_id: str) -> list[JournalEvent]:
    """The run's own prompt when neither the journal nor the checkpoint kept it: a run that
    writes its checkpoint at exit (checkpoints.durability) and died within the journal's
    flush interval. The run row has the request's input."""
    from apps.runs.models import RunEvent

    if RunEvent.objects.filter(run_id=run_id, event_type="llm.human.input").exists():
        return []
    kwargs = Run.objects.filter(pk=run_id).values_list("kwargs", flat=True).first() or {}
    raw = ((kwargs.get("input") or {}) if isinstance(kwargs.get("input"), dict) else {}).get("messages") or []
    try:
        messages = convert_to_messages(raw if isinstance(raw, list) else [raw])
    except (ValueError, TypeError, NotImplementedError):
        return []
    return [JournalEvent("llm.human.input", "message", {**to_jsonable(m), "id": m.id or str(uuid.uuid4())}, {"caller": "lead_agent"})
            for m in messages if isinstance(m, HumanMessage)]


def _settle(*, run_id: str, thread_id: str, model_name: str, messages: list) -> bool:
    """Mark the run as an error if its lease has still lapsed, journal what the checkpoint has
    and the journal lacks, and free the thread: one transaction. False when the run was
    settled or renewed meanwhile."""

    def events() -> list[JournalEvent]:
        # Read inside the settle's transaction: what the journal holds cannot change under it.
        progress = RunProgress(seen_message_ids=journaled_message_ids(thread_id=thread_id))
        entries = _unjournaled_input(run_id) + message_events(messages, progress, model_name)
        entries.append(JournalEvent("run.error", "error", ORPHAN_ERROR, {"error_type": "orphan_recovered",
                                                                       "recovered_messages": len(entries)}))
        return entries

    return run_settle(run_id=run_id, thread_id=thread_id, status=Run.Status.ERROR, stop_reason="orphan_recovered",
                      error=ORPHAN_ERROR, thread_status=ThreadStatus.ERROR, thread_only_if_busy=True, events=events,
                      only_if=_lapsed(timezone.now()) & Q(status__in=Run.ACTIVE_STATUSES))


def _end_stream(runtime: Any, run_id: str) -> None:
    """Tell the run's followers it failed, then end its stream, as its worker would have."""
    try:
        runtime.bridge.publish(run_id, "error", ORPHAN_ERROR_EVENT)
        runtime.bridge.end(run_id)
    except RuntimeError:  # already ended
        pass
    except Exception:  # the bridge (Redis) is down: the row is settled, which is what counts
        logger.warning("Could not publish the end of recovered run %s", run_id, exc_info=True)


def _drop_reservation(run_id: str) -> bool:
    """A thread reservation (apps/runs/reservations.py) whose process died held nothing
    worth keeping: its row goes, if its lease has still lapsed."""
    deleted, _ = Run.slots.filter(_lapsed(timezone.now()), pk=run_id, status__in=Run.ACTIVE_STATUSES).exclude(kind=Run.Kind.RUN).delete()
    return bool(deleted)


def recover_orphans(runtime: Any, *, run_id: str | None = None) -> list[str]:
    """Settle active runs whose lease has lapsed, and drop such thread reservations (only
    ``run_id`` when given); returns the ids recovered. Blocking: call it from a thread that
    is not the runs loop."""
    rows = Run.slots.filter(_lapsed(timezone.now()), status__in=Run.ACTIVE_STATUSES)
    if run_id is not None:
        rows = rows.filter(pk=run_id)
    recovered = []
    for orphan in list(rows.values("pk", "thread_id", "model_name", "kind")):
        if orphan["kind"] != Run.Kind.RUN:
            if _drop_reservation(orphan["pk"]):
                recovered.append(str(orphan["pk"]))
                logger.warning("Dropped the %s reservation of thread %s: its process stopped renewing it", orphan["kind"], orphan["thread_id"])
            continue
        messages = _checkpoint_messages(runtime, orphan["thread_id"])
        if _settle(run_id=orphan["pk"], thread_id=orphan["thread_id"], model_name=orphan["model_name"] or "", messages=messages):
            recovered.append(str(orphan["pk"]))
            _end_stream(runtime, str(orphan["pk"]))
    if recovered:
        logger.warning("Recovered %d orphaned run(s) and reservation(s)", len(recovered))
    return recovered


def _seconds_to_next_lapse() -> float:
    soonest = Run.slots.filter(status__in=Run.ACTIVE_STATUSES, lease_expires_at__isnull=False).aggregate(m=Min("lease_expires_at"))["m"]
    if soonest is None:
        return SWEEP_SECONDS
    # A little past the lapse: the comparison is strict, and clocks of processes differ.
    wait = (soonest - timezone.now()).total_seconds() + 0.2
    return min(SWEEP_SECONDS, max(MIN_SLEEP_SECONDS, wait))


def _sweep_once(runtime: Any) -> float:
    recover_orphans(runtime)
    return _seconds_to_next_lapse()


async def sweep_forever(runtime: Any) -> None:
    """On the runs loop, from the process's start: sweep, then sleep until the next lapse."""
    sweep = DatabaseSyncToAsync(_sweep_once, thread_sensitive=False)
    while True:
        try:
            delay = await sweep(runtime)
        except asyncio.CancelledError:
            raise
        except DatabaseError as exc:
            # Not migrated yet (`make run` migrates first), or the database is away: say it once a sweep.
            logger.warning("Run recovery sweep failed (retrying in %ss): %s", SWEEP_SECONDS, exc)
            delay = SWEEP_SECONDS
        except Exception:
            logger.exception("Run recovery sweep failed (retrying in %ss)", SWEEP_SECONDS)
            delay = SWEEP_SECONDS
        finally:
            _first_sweep.set()
        await asyncio.sleep(delay)


def recover_on_startup(runtime: Any, timeout: float = 60.0) -> None:
    """Start the runs loop, whose sweep settles the runs a crashed process left active, and
    wait for its first pass. Recovery must not wait for a run to start the loop: a thread
    held by a dead process's run would stay stuck until some other thread's run came along."""
    runtime.loop  # noqa: B018 -- starting the loop starts the sweep
    if not _first_sweep.wait(timeout):
        logger.warning("Run recovery at startup is still going after %ss; the server starts meanwhile", timeout)
