"""The stream bridge: a run's events, from the worker that produces them to every subscriber.

Each run has a bounded buffer of events with monotonic ids (``<epoch_ms>-<n>``, ``n`` counting
from 0 per run). Subscribers replay what the buffer still holds after a given id and then follow
live events; a cursor older than the buffer gets one explicit ``gap`` item instead of a silent
hole. Publishers and subscribers may live on different threads and event loops (the runs loop
produces, the ASGI loop serves), so state is guarded by a lock and waiters are woken with
``call_soon_threadsafe``.
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

END = "end"
GAP = "gap"
HEARTBEAT = "heartbeat"


@dataclass(frozen=True)
class StreamItem:
    """One thing a subscriber receives. ``id`` is None for heartbeats and gaps."""

    event: str
    data: Any
    id: str | None = None


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


def _parse_id(event_id: str) -> int | None:
    """The per-run counter of an id, or None when it is not one of ours."""
    head, sep, tail = event_id.rpartition("-")
    if not sep or not head.isdigit() or not tail.isdigit():
        return None
    return int(tail)


@dataclass
class _RunStream:
    buffer: deque[StreamItem]
    counter: int = 0
    last_ms: int = 0
    ended: bool = False
    ended_at: float | None = None
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = field(default_factory=list)

    @property
    def first_counter(self) -> int:
        return self.counter - len(self.buffer)


class MemoryStreamBridge:
    """In-process bridge for the embedded mode."""

    def __init__(self, *, max_events: int = 256, retain_after_end: float = 60.0):
        self.max_events = max_events
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
                stream = self._runs[run_id] = _RunStream(buffer=deque(maxlen=self.max_events))
            if stream.ended:
                raise RuntimeError(f"stream of run {run_id} has already ended")
            # Never below the last id, even if the clock steps back: ids stay ordered as
            # (ms, n) pairs, which is what Redis Streams requires of them too.
            stream.last_ms = max(stream.last_ms, int(time.time() * 1000))
            event_id = f"{stream.last_ms}-{stream.counter}"
            stream.buffer.append(StreamItem(event, data, event_id))
            stream.counter += 1
            if ending:
                stream.ended = True
                stream.ended_at = time.monotonic()
            waiters, stream.waiters = stream.waiters, []
        for loop, fut in waiters:
            _wake(loop, fut)
        return event_id

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
            self._runs.setdefault(run_id, _RunStream(buffer=deque(maxlen=self.max_events)))

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

    async def subscribe_batches(self, run_id: str, *, last_event_id: str | None = None,
                                heartbeat: float | None = 15.0) -> AsyncIterator[list[StreamItem]]:
        """``subscribe``, with the items that are there together handed over together: a
        stream's writer can send them in one write."""
        loop = asyncio.get_running_loop()
        next_counter: int | None = None
        if last_event_id is not None:
            parsed = _parse_id(last_event_id)
            next_counter = None if parsed is None else parsed + 1
        while True:
            with self._lock:
                stream = self._runs.get(run_id)
                if stream is None:
                    pending: list[StreamItem] = [StreamItem(END, None)]
                    waiter = None
                else:
                    first = stream.first_counter
                    if next_counter is None:
                        next_counter = first
                    if next_counter < first:
                        earliest = stream.buffer[0].id if stream.buffer else None
                        latest = stream.buffer[-1].id if stream.buffer else None
                        pending = [StreamItem(GAP, {
                            "code": "stream_replay_gap",
                            "run_id": run_id,
                            "requested_event_id": last_event_id,
                            "earliest_available_event_id": earliest,
                            "latest_available_event_id": latest,
                            "recovery": "reload_durable_state",
                        })]
                        waiter = None
                    else:
                        # An id above the watermark (another process's, or made up) replays
                        # from the earliest retained event rather than waiting forever.
                        if next_counter > stream.counter:
                            next_counter = first
                        pending = list(itertools.islice(stream.buffer, next_counter - first, None))
                        next_counter += len(pending)
                        waiter = None
                        if not pending and stream.ended:
                            # Resumed after the last event (a client that lost its connection
                            # just after `end`): nothing will come, so end now.
                            pending = [StreamItem(END, None)]
                        elif not pending:
                            waiter = loop.create_future()
                            stream.waiters.append((loop, waiter))
            for index, item in enumerate(pending):
                if item.event in (END, GAP):
                    yield pending[: index + 1]
                    return
            if pending:
                yield pending
            if waiter is not None:
                try:
                    # asyncio.wait leaves the future alone on timeout (wait_for would need a shield)
                    done, _ = await asyncio.wait((waiter,), timeout=heartbeat)
                    if not done:
                        yield [StreamItem(HEARTBEAT, None)]
                finally:
                    if not waiter.done():
                        waiter.cancel()
                        with self._lock:
                            stream = self._runs.get(run_id)
                            if stream is not None:
                                stream.waiters = [w for w in stream.waiters if w[1] is not waiter]


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


def _wake(loop: asyncio.AbstractEventLoop, fut: asyncio.Future) -> None:
    def _set() -> None:
        if not fut.done():
            fut.set_result(None)

    try:
        loop.call_soon_threadsafe(_set)
    except RuntimeError:  # the subscriber's loop is closed: nobody is waiting any more
        pass
