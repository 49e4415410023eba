"""The stream bridge on Redis Streams, for runs produced and served by different processes.

One stream per run (``<key_prefix><run_id>:events``); entries carry ``event`` and ``data`` (JSON
text) and their Redis ids (``<ms>-<seq>``) are the event ids, monotonic per run across processes.
Behaviour matches :class:`~harness.runtime.stream_bridge.MemoryStreamBridge`: bounded replay,
one ``gap`` item for a cursor older than what is retained, heartbeats, refusal after ``end``
(an entry named ``end`` is the end, whichever method wrote it).

Trimming is done by the publish script with XDEL rather than XADD MAXLEN: Redis 7 only advances
``max-deleted-entry-id`` on XDEL, and that watermark is what makes gap detection exact.

A run this process executes (``produce_here``) is also kept in memory: its events get their ids
here (``<ms>-<n>``, as the memory bridge makes them), subscribers in this process read them from
memory, and a background thread writes them to Redis in pipelined batches under the same ids for
every other process. Going through Redis for a subscriber next to the run cost three round
trips per event (publish, wake-up, read).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio

from harness.runtime.stream_bridge import END, GAP, HEARTBEAT, MemoryStreamBridge, StreamItem

logger = logging.getLogger(__name__)

# KEYS[1] stream; ARGV: event, data, max_events, ttl ms while running, ttl ms once ended, id.
# The id is '*' (Redis makes one) or the producer's own; one that is not above the stream's
# last (another process wrote to the stream meanwhile) is replaced by a Redis-made one, unless
# the entry is already there (a batch sent again after a lost reply): sending is idempotent.
# Returns the id written, or false when the stream already ended.
_PUBLISH_LUA = """
local key = KEYS[1]
local last = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
if last then
  local fields = last[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'event' and fields[i + 1] == 'end' then return false end
  end
end
local id = false
if ARGV[6] ~= '*' then
  id = redis.pcall('XADD', key, ARGV[6], 'event', ARGV[1], 'data', ARGV[2])
  if type(id) == 'table' and id.err then
    if #redis.call('XRANGE', key, ARGV[6], ARGV[6]) > 0 then return ARGV[6] end
    id = false
  end
end
if not id then id = redis.call('XADD', key, '*', 'event', ARGV[1], 'data', ARGV[2]) end
local excess = redis.call('XLEN', key) - tonumber(ARGV[3])
if excess > 0 then
  local old = redis.call('XRANGE', key, '-', '+', 'COUNT', excess)
  for i = 1, #old do redis.call('XDEL', key, old[i][1]) end
end
if ARGV[1] == 'end' then
  redis.call('PEXPIRE', key, ARGV[5])
else
  redis.call('PEXPIRE', key, ARGV[4])
end
return id
"""

# KEYS[1] stream; ARGV: XRANGE start, count. The watermarks and the entries are read in one
# atomic step, so "nothing after the cursor was trimmed" holds for exactly the entries returned.
# Returns false for a missing stream, else {last-generated, max-deleted, first id, last id, entries,
# ended}: ended is 1 when the last entry is `end`.
_READ_LUA = """
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 then return false end
local info = redis.call('XINFO', 'STREAM', key)
local f = {}
for i = 1, #info, 2 do f[info[i]] = info[i + 1] end
local first, last = f['first-entry'], f['last-entry']
local ended = 0
if last then
  local fields = last[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'event' and fields[i + 1] == 'end' then ended = 1 end
  end
end
return {
  f['last-generated-id'], f['max-deleted-entry-id'],
  first and first[1] or '', last and last[1] or '',
  redis.call('XRANGE', key, ARGV[1], '+', 'COUNT', ARGV[2]),
  ended,
}
"""

_ID_RE = re.compile(r"(\d+)-(\d+)")
_MAX_PART = 2**64 - 1  # Redis ids are two u64s; anything larger cannot exist
_READ_BATCH = 512
_RUNNING_TTL = 24 * 3600.0  # a safety net for runs whose worker died before ``end``
# Locally produced events waiting for Redis: how long a batch is retried while Redis is away.
_SEND_RETRY_SECONDS = 30.0

_StreamId = tuple[int, int]


def _parse_stream_id(event_id: str | None) -> _StreamId | None:
    if event_id is None:
        return None
    match = _ID_RE.fullmatch(event_id)
    return (int(match[1]), int(match[2])) if match else None


def _fmt(stream_id: _StreamId) -> str:
    return f"{stream_id[0]}-{stream_id[1]}"


def _encode(data: Any) -> str:
    return json.dumps(data, default=str, ensure_ascii=False, separators=(",", ":"))


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


@dataclass
class _AsyncClient:
    client: redis.asyncio.Redis
    publish: Any
    read: Any


class RedisStreamBridge:
    """Bridge shared by every process that reaches the same Redis."""

    running_ttl: float = _RUNNING_TTL
    send_retry_seconds: float = _SEND_RETRY_SECONDS
    # How long a sync publish of a run produced here waits for Redis to have the event.
    SYNC_PUBLISH_WAIT = 5.0

    def __init__(self, url: str, *, max_events: int = 256, retain_after_end: float = 60.0, key_prefix: str = "deerflow:run:"):
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        self.url = url
        self.max_events = max_events
        self.retain_after_end = retain_after_end
        self.key_prefix = key_prefix
        self._lock = threading.Lock()
        self._sync: redis.Redis | None = None
        self._sync_publish: Any = None
        # redis.asyncio clients are bound to the loop that first used them; the bridge is used
        # from the ASGI loop, the runs loop and tests' loops, hence one client per loop.
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AsyncClient] = weakref.WeakKeyDictionary()
        # Runs produced here: their events, served to this process's subscribers from memory.
        self._local = MemoryStreamBridge(max_events=max_events, retain_after_end=retain_after_end)
        # (run_id, event_id, event, data) on their way to Redis, written by one sender thread.
        self._outbox: deque[tuple[str, str, str, Any]] = deque()
        self._outbox_changed = threading.Condition()
        self._queued = 0  # events ever queued, and of those, handled (sent or given up on)
        self._handled = 0
        self._sender: threading.Thread | None = None
        self._sender_idle = False
        self._closing = False

    def key(self, run_id: str) -> str:
        return f"{self.key_prefix}{run_id}:events"

    # -- clients ---------------------------------------------------------------------

    def _sync_client(self) -> tuple[redis.Redis, Any]:
        with self._lock:
            if self._sync is None:
                self._sync = redis.Redis.from_url(self.url, decode_responses=True)
                self._sync_publish = self._sync.register_script(_PUBLISH_LUA)
            return self._sync, self._sync_publish

    def _async_client(self) -> _AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._async.get(loop)
            if state is None:
                client = redis.asyncio.Redis.from_url(self.url, decode_responses=True)
                state = _AsyncClient(client, client.register_script(_PUBLISH_LUA), client.register_script(_READ_LUA))
                self._async[loop] = state
            return state

    def close(self) -> None:
        """Release every client. Clients of loops that are running elsewhere close on them.
        Events produced here that are still on their way to Redis are sent first."""
        self.flush()
        with self._outbox_changed:
            self._closing = True
            self._outbox_changed.notify_all()
            sender, self._sender = self._sender, None
        if sender is not None:
            sender.join(5)
        with self._outbox_changed:
            self._closing = False
        with self._lock:
            sync, self._sync, self._sync_publish = self._sync, None, None
            states = list(self._async.items())
            self._async.clear()
        if sync is not None:
            sync.close()
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop, state in states:
            if loop.is_closed():
                continue
            if loop is current:
                task = loop.create_task(state.client.aclose())
                _pending_closes.add(task)
                task.add_done_callback(_pending_closes.discard)
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(state.client.aclose(), loop)
            else:
                loop.run_until_complete(state.client.aclose())

    async def aclose(self) -> None:
        """Like :meth:`close`, but waits for this loop's client to be closed."""
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._async.pop(loop, None)
        if state is not None:
            await state.client.aclose()
        self.close()

    # -- producing -------------------------------------------------------------------

    def _publish_args(self, event: str, data: Any, event_id: str = "*") -> list[Any]:
        return [event, _encode(data), self.max_events, _ms(self.running_ttl), _ms(self.retain_after_end), event_id]

    def produce_here(self, run_id: str) -> None:
        self._local.open(run_id)

    def _publish_local(self, run_id: str, event: str, data: Any, *, ending: bool = False) -> str | None:
        """Publish a run produced here: into memory now, to Redis by the sender. None when the
        run is not produced here."""
        event_id = self._local.publish_if_open(run_id, event, data, ending=ending)
        if event_id is not None:
            with self._outbox_changed:
                self._outbox.append((run_id, event_id, END if ending else event, None if ending else data))
                self._queued += 1
                if self._sender is None:
                    self._sender = threading.Thread(target=self._send_forever, name="redis-bridge-sender", daemon=True)
                    self._sender.start()
                elif self._sender_idle:
                    # Only an idle sender needs waking: a busy one takes the whole outbox next.
                    self._outbox_changed.notify_all()
        return event_id

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until the events produced here so far have reached Redis (or been given up on)."""
        deadline = time.monotonic() + timeout
        with self._outbox_changed:
            target = self._queued
            while self._handled < target:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._sender is None:
                    return False
                self._outbox_changed.wait(remaining)
        return True

    def _send_forever(self) -> None:
        client = redis.Redis.from_url(self.url, decode_responses=True)
        script = client.register_script(_PUBLISH_LUA)
        try:
            while True:
                with self._outbox_changed:
                    while not self._outbox and not self._closing:
                        self._sender_idle = True
                        self._outbox_changed.wait()
                        self._sender_idle = False
                    if not self._outbox:
                        return
                    batch = list(self._outbox)
                    self._outbox.clear()
                try:
                    self._send(client, script, batch)
                except Exception:  # a bug or a refusal must not stop later events from going out
                    logger.exception("Could not send %d run events to Redis", len(batch))
                finally:
                    with self._outbox_changed:
                        self._handled += len(batch)
                        self._outbox_changed.notify_all()
        finally:
            client.close()

    def _send(self, client: redis.Redis, script: Any, batch: list[tuple[str, str, str, Any]]) -> None:
        """One pipeline for the batch: one round trip however many runs and events it holds."""
        args = [(self.key(run_id), self._publish_args(event, data, event_id)) for run_id, event_id, event, data in batch]
        deadline = time.monotonic() + self.send_retry_seconds
        delay = 0.1
        while True:
            try:
                pipe = client.pipeline(transaction=False)
                for key, argv in args:
                    pipe.evalsha(script.sha, 1, key, *argv)
                results = pipe.execute(raise_on_error=False)
                if any(isinstance(r, redis.exceptions.NoScriptError) for r in results):
                    # First use, or Redis restarted: without the script every entry failed alike.
                    script.sha = client.script_load(_PUBLISH_LUA)
                    continue
                for result in results:
                    if isinstance(result, Exception):
                        logger.warning("Redis refused a run event: %s", result)
                return
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
                if time.monotonic() + delay > deadline:
                    logger.warning("Gave up sending %d run events to Redis: %s (subscribers in this process had them)", len(batch), exc)
                    return
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    @staticmethod
    def _checked(run_id: str, event_id: str | None) -> str:
        if event_id is None:
            raise RuntimeError(f"stream of run {run_id} has already ended")
        return event_id

    def publish(self, run_id: str, event: str, data: Any) -> str:
        local = self._publish_local(run_id, event, data)
        if local is not None:
            # Sync callers are request threads (admission's metadata, a cancel's end) whose
            # client may next ask another process for the stream: it must be there by then.
            self.flush(self.SYNC_PUBLISH_WAIT)
            return local
        _, script = self._sync_client()
        return self._checked(run_id, script(keys=[self.key(run_id)], args=self._publish_args(event, data)))

    def end(self, run_id: str) -> str:
        local = self._publish_local(run_id, END, None, ending=True)
        if local is not None:
            self.flush(self.SYNC_PUBLISH_WAIT)
            return local
        return self.publish(run_id, END, None)

    async def apublish(self, run_id: str, event: str, data: Any) -> str:
        local = self._publish_local(run_id, event, data)
        if local is not None:
            return local
        script = self._async_client().publish
        return self._checked(run_id, await script(keys=[self.key(run_id)], args=self._publish_args(event, data)))

    async def aend(self, run_id: str) -> str:
        local = self._publish_local(run_id, END, None, ending=True)
        return local if local is not None else await self.apublish(run_id, END, None)

    def has_run(self, run_id: str) -> bool:
        if self._local.has_run(run_id):
            return True
        client, _ = self._sync_client()
        return bool(client.exists(self.key(run_id)))

    def is_ended(self, run_id: str) -> bool:
        if self._local.has_run(run_id):
            return self._local.is_ended(run_id)
        client, _ = self._sync_client()
        last = client.xrevrange(self.key(run_id), count=1)
        return bool(last) and last[0][1].get("event") == END

    # -- consuming -------------------------------------------------------------------

    async def subscribe(self, run_id: str, *, last_event_id: str | None = None, heartbeat: float | None = 15.0) -> AsyncIterator[StreamItem]:
        """Replay after ``last_event_id`` (everything retained when None), then follow.

        Ends after the ``end`` item, or after a ``gap`` item. A run whose stream does not exist
        yields a lone ``end`` (it finished long ago, or never started).
        """
        if self._local.has_run(run_id):
            async for item in self._local.subscribe(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
                yield item
            return
        async for item in self._subscribe_redis(run_id, last_event_id, heartbeat):
            yield item

    async def subscribe_batches(self, run_id: str, *, last_event_id: str | None = None,
                                heartbeat: float | None = 15.0) -> AsyncIterator[list[StreamItem]]:
        """The local bridge's batches for a run this process executes; Redis entries one by one."""
        if self._local.has_run(run_id):
            async for batch in self._local.subscribe_batches(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
                yield batch
            return
        async for item in self._subscribe_redis(run_id, last_event_id, heartbeat):
            yield [item]

    async def _subscribe_redis(self, run_id: str, last_event_id: str | None, heartbeat: float | None) -> AsyncIterator[StreamItem]:
        state = self._async_client()
        key = self.key(run_id)
        cursor = _parse_stream_id(last_event_id)
        if cursor is not None and max(cursor) > _MAX_PART:
            cursor = None  # no Redis id is that large: above the watermark, so replay
        # Blocking reads must return before the client's socket timeout fires.
        socket_timeout = state.client.connection_pool.connection_kwargs.get("socket_timeout")
        block_slice = min(2.0, socket_timeout / 2) if socket_timeout else 2.0
        loop = asyncio.get_running_loop()
        while True:
            start = "-" if cursor is None else f"({_fmt(cursor)}"
            reply = await state.read(keys=[key], args=[start, _READ_BATCH])
            if reply is None:
                yield StreamItem(END, None)
                return
            last_generated, max_deleted, first_id, last_id, entries, ended = reply
            if cursor is not None:
                if cursor > _parse_stream_id(last_generated):
                    # Above the watermark (made up, or from a stream since recreated).
                    cursor = None
                    continue
                if _parse_stream_id(max_deleted) > cursor:
                    yield StreamItem(GAP, {
                        "code": "stream_replay_gap",
                        "run_id": run_id,
                        "requested_event_id": last_event_id,
                        "earliest_available_event_id": first_id or None,
                        "latest_available_event_id": last_id or None,
                        "recovery": "reload_durable_state",
                    })
                    return
            for entry_id, flat in entries:
                fields = dict(zip(flat[::2], flat[1::2]))
                item = StreamItem(fields["event"], json.loads(fields["data"]), entry_id)
                yield item
                if item.event == END:
                    return
            if entries:
                cursor = _parse_stream_id(entries[-1][0])
                if len(entries) == _READ_BATCH:
                    continue
            elif ended:
                # Resumed after the `end` entry itself: nothing will come, so end now.
                yield StreamItem(END, None)
                return
            # XREAD is only the wake-up; the next atomic read decides what is delivered, so
            # entries trimmed while we waited become a gap rather than a silent hole.
            after = "0-0" if cursor is None else _fmt(cursor)
            deadline = None if heartbeat is None else loop.time() + heartbeat
            woke = False
            while True:
                wait = block_slice if deadline is None else min(block_slice, deadline - loop.time())
                if wait < 0.001:
                    break
                if await state.client.xread({key: after}, count=1, block=_ms(wait)):
                    woke = True
                    break
                if deadline is None:
                    break  # re-read anyway: the stream may have expired meanwhile
            if not woke and heartbeat is not None:
                yield StreamItem(HEARTBEAT, None)


_pending_closes: set[asyncio.Task] = set()
