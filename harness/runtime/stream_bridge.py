"""The stream bridge: a run's events, from the worker that produces them to every subscriber.

Each run keeps its newest events as they were published, with monotonic ids (``<epoch_ms>-<n>``,
``n`` counting from 0 per run), and its older ones compacted (``stream_compaction``): a resumed
subscriber gets everything after its id for as long as the run is retained, however many events
it produced, in fewer and larger pieces where that gives the same result. Only past a safety
cap on what one run may hold are the oldest events dropped, and a cursor older than what is
left gets one explicit ``gap`` item instead of a silent hole; an id that was never issued for
the run gets a ``gap`` saying so, never a replay. Publishers and subscribers may live on
different threads and event loops (the runs loop produces, the ASGI loop serves), so state is
guarded by a lock and waiters are woken with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.runtime.stream_compaction import Key, Lost, Segment, compact, fmt_key, id_key, replay
from harness.runtime.stream_items import END, GAP, HEARTBEAT, StreamItem

__all__ = ["END", "GAP", "HEARTBEAT", "MemoryStreamBridge", "StreamBridge", "StreamItem", "subscribe_batches",
           "gap_item", "unknown_id_item"]

class StreamBridge(Protocol):
    """Sync ``publish``/``end`` are for request threads; code on an event loop (the worker)
    calls ``apublish``/``aend`` so a networked bridge never blocks the loop."""

    def publish(self, run_id: str, event: str, data: Any) -> str: ...

    def end(self, run_id: str) -> str: ...

    async def apublish(self, run_id: str, event: str, data: Any) -> str: ...

    async def aend(self, run_id: str) -> str: ...

    def subscribe(self, run_id: str, *, last_event_id: str | None = None, heartbeat: float | None = 15.0) -> AsyncIterator[StreamItem]: ...

    def has_run(self, run_id: str) -> bool: ...

    def is_ended(self, run_id: str) -> bool: ...

    def produce_here(self, run_id: str) -> None:
        """Declare that this process publishes every event of the run from now on (it executes
        the run), before its first event: a networked bridge may then serve this process's
        subscribers from memory."""
        ...


def gap_item(run_id: str, requested: str | None, earliest: str | None, latest: str | None) -> StreamItem:
    """The one item a cursor older than what the run still holds gets."""
    return StreamItem(GAP, {
        "code": "stream_replay_gap",
        "run_id": run_id,
        "requested_event_id": requested,
        "earliest_available_event_id": earliest,
        "latest_available_event_id": latest,
        "recovery": "reload_durable_state",
    })


def unknown_id_item(run_id: str, requested: str | None, latest: str | None) -> StreamItem:
    """The one item an id this run never issued gets (made up, or another run's): replaying the
    whole run to such a client would hand it duplicates of what it already has."""
    return StreamItem(GAP, {
        "code": "stream_event_id_unknown",
        "run_id": run_id,
        "requested_event_id": requested,
        "latest_available_event_id": latest,
        "recovery": "reload_durable_state",
    })


# Past this many compacted segments a run's oldest are dropped (a gap for cursors before them).
# A text run of any length is one segment: only a run of tens of thousands of tool steps,
# progress events or the like gets here.
MAX_SEGMENTS = 20_000


@dataclass
class _RunStream:
    recent: deque[StreamItem] = field(default_factory=deque)  # the newest events, as published
    compacted: list[Segment] = field(default_factory=list)  # the ones before them
    moved: int = 0  # events moved from ``recent`` into ``compacted`` so far
    counter: int = 0
    last_ms: int = 0
    first_key: Key | None = None
    last_key: Key | None = None
    ended: bool = False
    ended_at: float | None = None
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = field(default_factory=list)

    def earliest_id(self) -> str | None:
        for segment in self.compacted:
            if not isinstance(segment, Lost):
                return fmt_key(segment.first)
        return self.recent[0].id if self.recent else None

    def issued(self, cursor: Key, event_id: str) -> bool:
        """Whether ``event_id`` can be one this run handed out."""
        if self.first_key is None or not (self.first_key <= cursor <= self.last_key):  # type: ignore[operator]
            return False
        position = cursor[1]
        if position < self.moved:
            return True  # compacted: its exact id is no longer kept, only the range
        index = position - self.moved
        return index < len(self.recent) and self.recent[index].id == event_id


class MemoryStreamBridge:
    """In-process bridge for the embedded mode."""

    def __init__(self, *, max_events: int = 256, retain_after_end: float = 60.0, max_segments: int = MAX_SEGMENTS):
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        self.max_events = max_events  # how many of a run's newest events stay as published
        self.max_segments = max_segments
        self.retain_after_end = retain_after_end
        self._runs: dict[str, _RunStream] = {}
        self._lock = threading.Lock()
        self._last_sweep = float("-inf")

    # -- producing -------------------------------------------------------------------

    def _append(self, run_id: str, event: str, data: Any, *, ending: bool, create: bool = True) -> str | None:
        with self._lock:
            self._sweep_locked()
            stream = self._runs.get(run_id)
            if stream is None:
                if not create:
                    return None
                stream = self._runs[run_id] = _RunStream()
            if stream.ended:
                raise RuntimeError(f"stream of run {run_id} has already ended")
            # Never below the last id, even if the clock steps back: ids stay ordered as
            # (ms, n) pairs, which is what Redis Streams requires of them too.
            stream.last_ms = max(stream.last_ms, int(time.time() * 1000))
            key = (stream.last_ms, stream.counter)
            event_id = f"{stream.last_ms}-{stream.counter}"
            stream.recent.append(StreamItem(event, data, event_id))
            stream.counter += 1
            stream.last_key = key
            if stream.first_key is None:
                stream.first_key = key
            if len(stream.recent) > self.max_events:
                self._compact_locked(stream)
            if ending:
                stream.ended = True
                stream.ended_at = time.monotonic()
            waiters, stream.waiters = stream.waiters, []
        for loop, fut in waiters:
            _wake(loop, fut)
        return event_id

    def _compact_locked(self, stream: _RunStream) -> None:
        """Move the older half of the recent window into compacted segments (amortised: once
        per ``max_events / 2`` events), then hold to the segment cap."""
        keep = max(1, self.max_events // 2)
        older = [stream.recent.popleft() for _ in range(len(stream.recent) - keep)]
        stream.moved += len(older)
        stream.compacted.extend(compact(older))
        excess = len(stream.compacted) - self.max_segments
        if excess > 0:
            dropped = stream.compacted[: excess + 1]
            stream.compacted[: excess + 1] = [Lost(dropped[0].first, dropped[-1].last)]

    def publish(self, run_id: str, event: str, data: Any) -> str:
        return self._append(run_id, event, data, ending=False)  # type: ignore[return-value]

    def end(self, run_id: str) -> str:
        return self._append(run_id, END, None, ending=True)  # type: ignore[return-value]

    def publish_if_open(self, run_id: str, event: str, data: Any, *, ending: bool = False) -> str | None:
        """Publish only to a run this bridge already holds (see ``open``); None otherwise."""
        return self._append(run_id, END if ending else event, None if ending else data, ending=ending, create=False)

    def open(self, run_id: str) -> None:
        """Hold the run's stream before its first event."""
        with self._lock:
            self._runs.setdefault(run_id, _RunStream())

    def produce_here(self, run_id: str) -> None:
        """Nothing to do: every stream this bridge holds is this process's own."""

    # Nothing here does IO, so the async variants need not leave the loop.
    async def apublish(self, run_id: str, event: str, data: Any) -> str:
        return self.publish(run_id, event, data)

    async def aend(self, run_id: str) -> str:
        return self.end(run_id)

    def has_run(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._runs

    def is_ended(self, run_id: str) -> bool:
        with self._lock:
            stream = self._runs.get(run_id)
            return bool(stream and stream.ended)

    def _sweep_locked(self) -> None:
        # A sweep scans every run; doing it per event made publishing O(runs).
        now = time.monotonic()
        if now - self._last_sweep < 1.0:
            return
        self._last_sweep = now
        stale = [rid for rid, s in self._runs.items() if s.ended and s.ended_at is not None and now - s.ended_at > self.retain_after_end]
        for rid in stale:
            del self._runs[rid]

    # -- consuming -------------------------------------------------------------------

    async def subscribe(self, run_id: str, *, last_event_id: str | None = None, heartbeat: float | None = 15.0) -> AsyncIterator[StreamItem]:
        """Replay after ``last_event_id`` (everything retained when None), then follow.

        Ends after the ``end`` item, or after a ``gap`` item. A run this bridge does not know
        yields a lone ``end`` (it finished long ago, or runs elsewhere).
        """
        async for batch in self.subscribe_batches(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
            for item in batch:
                yield item

    def _pending_locked(self, run_id: str, stream: _RunStream, cursor: Key | None, position: int,
                        requested: str | None) -> tuple[list[StreamItem], int]:
        """What a subscriber at ``position`` (the next event's n) with ``cursor`` (the last id
        it has) gets now, and its position after that."""
        if position >= stream.moved:
            pending = list(itertools.islice(stream.recent, position - stream.moved, None))
            return pending, position + len(pending)
        # Behind the recent window: the compacted segments after the cursor, then the window.
        pending = []
        for item in replay(stream.compacted, cursor):
            if isinstance(item, Lost):
                return [gap_item(run_id, requested, stream.earliest_id(), stream.recent[-1].id if stream.recent else None)], position
            pending.append(item)
        pending.extend(stream.recent)
        return pending, stream.moved + len(stream.recent)

    async def subscribe_batches(self, run_id: str, *, last_event_id: str | None = None,
                                heartbeat: float | None = 15.0) -> AsyncIterator[list[StreamItem]]:
        """``subscribe``, with the items that are there together handed over together: a
        stream's writer can send them in one write."""
        loop = asyncio.get_running_loop()
        cursor = id_key(last_event_id) if last_event_id is not None else None
        position: int | None = 0 if last_event_id is None else None
        while True:
            with self._lock:
                stream = self._runs.get(run_id)
                waiter = None
                if stream is None:
                    pending: list[StreamItem] = [StreamItem(END, None)]
                elif position is None and (cursor is None or not stream.issued(cursor, last_event_id)):  # type: ignore[arg-type]
                    latest = stream.recent[-1].id if stream.recent else None
                    pending = [unknown_id_item(run_id, last_event_id, latest)]
                else:
                    if position is None:
                        position = cursor[1] + 1  # type: ignore[index]  # an issued id's n is its position
                    pending, position = self._pending_locked(run_id, stream, cursor, position, last_event_id)
                    if not pending and stream.ended:
                        # Resumed after the last event (a client that lost its connection
                        # just after `end`): nothing will come, so end now, under the id of
                        # that `end` (a lone `end` without an id means "a run not held here").
                        pending = [StreamItem(END, None, stream.recent[-1].id if stream.recent else None)]
                    elif not pending:
                        waiter = loop.create_future()
                        stream.waiters.append((loop, waiter))
            for index, item in enumerate(pending):
                if item.event in (END, GAP):
                    yield pending[: index + 1]
                    return
            if pending:
                cursor = id_key(pending[-1].id)
                yield pending
            if waiter is not None:
                # The heartbeat is a timer on the waiter itself, not asyncio.wait: this wait is
                # taken once per batch a subscriber gets, about once per streamed chunk, and
                # asyncio.wait's own Python (a dozen calls) was a visible part of a chunk's cost.
                timer = loop.call_later(heartbeat, _time_up, waiter) if heartbeat is not None else None
                woken = None
                try:
                    woken = await waiter
                finally:
                    if timer is not None:
                        timer.cancel()
                    if woken is not True:  # timed out, or this subscriber was cancelled
                        if not waiter.done():
                            waiter.cancel()
                        with self._lock:
                            stream = self._runs.get(run_id)
                            if stream is not None:
                                stream.waiters = [w for w in stream.waiters if w[1] is not waiter]
                if woken is False:
                    yield [StreamItem(HEARTBEAT, None)]


async def subscribe_batches(bridge: StreamBridge, run_id: str, *, last_event_id: str | None = None,
                            heartbeat: float | None = 15.0) -> AsyncIterator[list[StreamItem]]:
    """The bridge's ``subscribe_batches`` where it has one; otherwise each item alone."""
    batched = getattr(bridge, "subscribe_batches", None)
    if batched is not None:
        async for batch in batched(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
            yield batch
        return
    async for item in bridge.subscribe(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
        yield [item]


def _time_up(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(False)


def _wake(loop: asyncio.AbstractEventLoop, fut: asyncio.Future) -> None:
    def _set() -> None:
        if not fut.done():
            fut.set_result(True)

    try:
        loop.call_soon_threadsafe(_set)
    except RuntimeError:  # the subscriber's loop is closed: nobody is waiting any more
        pass
