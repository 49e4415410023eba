"""A run's stream as a client follows it: the SSE endpoints and the chat's websocket.

The bridge answers a run it holds no events of with a lone ``end`` without an id: the run
ended longer ago than the bridge's retention, recovery settled it elsewhere, or it never
streamed where this process can reach. Two of those readings need the run's row:

- **Not started yet.** A run admitted by a process that serves no streams (beat's firing in
  the Celery worker) is offered to the servers (``handoff.py``); until one takes it, about half
  a second, no server holds its stream. Ending the client's stream then would tell it a run
  that is about to start has ended, and the chat would show nothing live until a reload. So
  while the row is still ``pending`` the subscription is tried again, with heartbeats between;
  a row read after the run started gets one more try at once, since its stream may have
  appeared after the bridge answered.
- **Failed.** The client is told why first, as a live failure would have told it: the run's
  ``error`` event (``selectors.run_failure``), then ``end``. A client resuming after the
  ``end`` of a stream the bridge still holds has seen its error and gets the lone ``end``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from channels.db import DatabaseSyncToAsync

from apps.runs.models import Run
from apps.runs.runtime import get_runtime
from apps.runs.selectors import run_failure
from harness.runtime.stream_bridge import END, HEARTBEAT, StreamItem, subscribe_batches

# How often a client of a run not started yet looks again: a server takes an offered run
# within its poll (handoff.POLL_SECONDS, 0.5 s).
UNSTARTED_RETRY_SECONDS = 0.2

_WAIT = object()


async def follow_run(run_id: str, last_event_id: str | None, *, heartbeat: float | None) -> AsyncIterator[list[StreamItem]]:
    """The bridge's batches of the run, read as the module docstring says."""
    loop = asyncio.get_running_loop()
    reading = DatabaseSyncToAsync(_after_lone_end, thread_sensitive=False)
    quiet_since = loop.time()
    looked_again = False
    while True:
        batches = subscribe_batches(get_runtime().bridge, run_id, last_event_id=last_event_id, heartbeat=heartbeat)
        try:
            batch = await anext(batches, None)
            if batch is None:
                return
            if _is_lone_end(batch):
                found = await reading(run_id, last_event_id)
                if found is not _WAIT and not looked_again:
                    # It may have started, and even finished, between the bridge's answer
                    # and the row's: its stream is then there now. One more look decides.
                    looked_again = True
                    continue
                if found is not _WAIT:
                    yield batch if found is None else [StreamItem("error", found), batch[0]]
                    return
            else:
                yield batch
                async for batch in batches:
                    yield batch
                return
        finally:
            await batches.aclose()
        await asyncio.sleep(UNSTARTED_RETRY_SECONDS)
        if heartbeat is not None and loop.time() - quiet_since >= heartbeat:
            quiet_since = loop.time()
            yield [StreamItem(HEARTBEAT, None)]


def _is_lone_end(batch: list[StreamItem]) -> bool:
    return len(batch) == 1 and batch[0].event == END and batch[0].id is None


def _after_lone_end(run_id: str, last_event_id: str | None) -> object:
    """``_WAIT`` for a run not started yet; else the failure a client has not seen, or None."""
    status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    if status == Run.Status.PENDING:
        return _WAIT
    if status != Run.Status.ERROR:
        return None
    if last_event_id is not None and get_runtime().bridge.has_run(run_id):
        return None
    return run_failure(run_id=run_id)
