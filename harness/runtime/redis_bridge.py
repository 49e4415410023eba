"""The stream bridge on Redis Streams, for runs produced and served by different processes.

One stream per run (``<key_prefix><run_id>:events``); entries carry ``event`` and ``data`` (JSON
text) and their Redis ids (``<ms>-<seq>``) are the event ids, monotonic per run across processes.
Behaviour matches :class:`~harness.runtime.stream_bridge.MemoryStreamBridge`: replay of
everything after a cursor for as long as the run is retained, one ``gap`` item for an id never
issued or older than a safety cap left, heartbeats, refusal after ``end`` (an entry named
``end`` is the end, whichever method wrote it).

A stream keeps its newest entries as they are; once it is longer than ``max_events`` the
process that published the entry compacts the oldest into segments (``stream_compaction``) kept
in a list beside the stream (``<key_prefix><run_id>:compacted``), moved there atomically by a
script. A reader whose cursor is older than the stream's first entry gets those segments in
the same atomic read.

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

from harness.runtime.stream_bridge import END, HEARTBEAT, MemoryStreamBridge, StreamItem, gap_item, unknown_id_item
from harness.runtime.stream_compaction import Lost, compact, from_json, replay, to_json

logger = logging.getLogger(__name__)

# KEYS[1] stream, KEYS[2] its compacted segments; ARGV: event, data, safety cap, ttl ms while
# running, ttl ms once ended, id. The id is '*' (Redis makes one) or the producer's own; one that
# is not above the stream's last (another process wrote to the stream meanwhile) is replaced by a
# Redis-made one, unless the entry is already there (a batch sent again after a lost reply):
# sending is idempotent. Past the safety cap (compaction fell behind) the oldest entries are
# dropped and a `lost` segment says which. Returns {id written, stream length}, or false when
# the stream already ended.
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
    if #redis.call('XRANGE', key, ARGV[6], ARGV[6]) > 0 then return {ARGV[6], redis.call('XLEN', key)} end
    id = false
  end
end
if not id then id = redis.call('XADD', key, '*', 'event', ARGV[1], 'data', ARGV[2]) end
local excess = redis.call('XLEN', key) - tonumber(ARGV[3])
if excess > 0 then
  local old = redis.call('XRANGE', key, '-', '+', 'COUNT', excess)
  for i = 1, #old do redis.call('XDEL', key, old[i][1]) end
  redis.call('RPUSH', KEYS[2], '{"k":"lost","first":"' .. old[1][1] .. '","last":"' .. old[#old][1] .. '"}')
end
local ttl = ARGV[4]
if ARGV[1] == 'end' then ttl = ARGV[5] end
redis.call('PEXPIRE', key, ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {id, redis.call('XLEN', key)}
"""

# KEYS[1] stream, KEYS[2] its compacted segments; ARGV: the first and last id compacted, how
# many entries that is, then the segments' JSON. Applied only if those entries are still the
# stream's oldest (another process may have compacted them first): they are deleted and their
# segments appended, in one atomic step, so a reader sees one or the other, never neither.
_COMPACT_LUA = """
local key = KEYS[1]
local head = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)[1]
if not head or head[1] ~= ARGV[1] then return 0 end
local old = redis.call('XRANGE', key, ARGV[1], ARGV[2])
if #old ~= tonumber(ARGV[3]) then return 0 end
for i = 1, #old do redis.call('XDEL', key, old[i][1]) end
for i = 4, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
local ttl = redis.call('PTTL', key)
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
"""

# KEYS[1] stream, KEYS[2] its compacted segments; ARGV: XRANGE start, count, the cursor ('' for
# none). The watermark, the entries and (when the cursor is older than every entry still in the
# stream) the compacted segments are read in one atomic step, so what compaction moved while we
# read is in exactly one of them. Returns false for a missing stream, else {last-generated,
# first id, last id, entries, ended, segments}: ended is 1 when the last entry is `end`.
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
local segments = {}
if ARGV[3] == '' or #redis.call('XREVRANGE', key, ARGV[3], '-', 'COUNT', 1) == 0 then
  segments = redis.call('LRANGE', KEYS[2], 0, -1)
end
return {
  f['last-generated-id'],
  first and first[1] or '', last and last[1] or '',
  redis.call('XRANGE', key, ARGV[1], '+', 'COUNT', ARGV[2]),
  ended,
  segments,
}
"""

_ID_RE = re.compile(r"(\d+)-(\d+)")
_MAX_PART = 2**64 - 1  # Redis ids are two u64s; anything larger cannot exist
_READ_BATCH = 512
_COMPACT_BATCH = 2048  # entries compacted in one step at most
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
    compact: Any


class RedisStreamBridge:
    """Bridge shared by every process that reaches the same Redis."""

    running_ttl: float = _RUNNING_TTL
    send_retry_seconds: float = _SEND_RETRY_SECONDS
    # How long a sync publish of a run produced here waits for Redis to have the event.
    SYNC_PUBLISH_WAIT = 5.0

    def __init__(self, url: str, *, max_events: int = 256, retain_after_end: float = 60.0, key_prefix: str = "deerflow:run:",
                 max_raw_events: int | None = None):
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        self.url = url
        self.max_events = max_events
        # Entries kept uncompacted at most, should compaction fall behind (a lost segment then).
        self.max_raw_events = max_raw_events or max(16 * max_events, 64)
        self.retain_after_end = retain_after_end
        self.key_prefix = key_prefix
        self._lock = threading.Lock()
        self._sync: redis.Redis | None = None
        self._sync_publish: Any = None
        self._sync_compact: Any = None
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

    def keys(self, run_id: str) -> list[str]:
        """The run's stream and the list of its compacted segments."""
        return [self.key(run_id), f"{self.key_prefix}{run_id}:compacted"]

    # -- clients ---------------------------------------------------------------------

    def _sync_client(self) -> tuple[redis.Redis, Any]:
        with self._lock:
            if self._sync is None:
                self._sync = redis.Redis.from_url(self.url, decode_responses=True)
                self._sync_publish = self._sync.register_script(_PUBLISH_LUA)
                self._sync_compact = self._sync.register_script(_COMPACT_LUA)
            return self._sync, self._sync_publish

    def _async_client(self) -> _AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._async.get(loop)
            if state is None:
                client = redis.asyncio.Redis.from_url(self.url, decode_responses=True)
                state = _AsyncClient(client, client.register_script(_PUBLISH_LUA), client.register_script(_READ_LUA),
                                     client.register_script(_COMPACT_LUA))
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
        return [event, _encode(data), self.max_raw_events, _ms(self.running_ttl), _ms(self.retain_after_end), event_id]

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
        compact_script = client.register_script(_COMPACT_LUA)
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
                    for run_id in self._send(client, script, batch):
                        self._compact_sync(client, compact_script, run_id)
                except Exception:  # a bug or a refusal must not stop later events from going out
                    logger.exception("Could not send %d run events to Redis", len(batch))
                finally:
                    with self._outbox_changed:
                        self._handled += len(batch)
                        self._outbox_changed.notify_all()
        finally:
            client.close()

    def _send(self, client: redis.Redis, script: Any, batch: list[tuple[str, str, str, Any]]) -> set[str]:
        """One pipeline for the batch: one round trip however many runs and events it holds.
        Returns the runs whose streams are now long enough to compact."""
        args = [(self.keys(run_id), self._publish_args(event, data, event_id)) for run_id, event_id, event, data in batch]
        deadline = time.monotonic() + self.send_retry_seconds
        delay = 0.1
        while True:
            try:
                pipe = client.pipeline(transaction=False)
                for keys, argv in args:
                    pipe.evalsha(script.sha, 2, *keys, *argv)
                results = pipe.execute(raise_on_error=False)
                if any(isinstance(r, redis.exceptions.NoScriptError) for r in results):
                    # First use, or Redis restarted: without the script every entry failed alike.
                    script.sha = client.script_load(_PUBLISH_LUA)
                    continue
                long_enough = set()
                for (run_id, *_), result in zip(batch, results):
                    if isinstance(result, Exception):
                        logger.warning("Redis refused a run event: %s", result)
                    elif result and self._needs_compaction(result):
                        long_enough.add(run_id)
                return long_enough
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
                if time.monotonic() + delay > deadline:
                    logger.warning("Gave up sending %d run events to Redis: %s (subscribers in this process had them)", len(batch), exc)
                    return set()
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    @staticmethod
    def _checked(run_id: str, result: list | None) -> str:
        if not result:
            raise RuntimeError(f"stream of run {run_id} has already ended")
        return result[0]

    # -- compacting ------------------------------------------------------------------

    def _needs_compaction(self, result: list) -> bool:
        return int(result[1]) > self.max_events

    def _compaction_args(self, entries: list) -> list[Any] | None:
        """The compact script's arguments for the oldest ``entries`` of a stream."""
        if not entries:
            return None
        items = [StreamItem(fields["event"], json.loads(fields["data"]), entry_id) for entry_id, fields in entries]
        segments = [_encode(to_json(segment)) for segment in compact(items)]
        return [entries[0][0], entries[-1][0], len(entries), *segments]

    def _compaction_count(self, length: int) -> int:
        keep = max(1, self.max_events // 2)
        return min(length - keep, _COMPACT_BATCH)

    def _compact_sync(self, client: redis.Redis, script: Any, run_id: str) -> None:
        key = self.key(run_id)
        count = self._compaction_count(client.xlen(key))
        if count > 0:
            args = self._compaction_args(client.xrange(key, count=count))
            if args:
                script(keys=self.keys(run_id), args=args, client=client)

    async def _compact_async(self, state: _AsyncClient, run_id: str, length: int) -> None:
        count = self._compaction_count(length)
        if count > 0:
            args = self._compaction_args(await state.client.xrange(self.key(run_id), count=count))
            if args:
                await state.compact(keys=self.keys(run_id), args=args)

    def _published_sync(self, run_id: str, result: list | None) -> str:
        event_id = self._checked(run_id, result)
        if self._needs_compaction(result):  # type: ignore[arg-type]
            client, _ = self._sync_client()
            self._compact_sync(client, self._sync_compact, run_id)
        return event_id

    def publish(self, run_id: str, event: str, data: Any) -> str:
        local = self._publish_local(run_id, event, data)
        if local is not None:
            # Sync callers are request threads (admission's metadata, a cancel's end) whose
            # client may next ask another process for the stream: it must be there by then.
            self.flush(self.SYNC_PUBLISH_WAIT)
            return local
        _, script = self._sync_client()
        return self._published_sync(run_id, script(keys=self.keys(run_id), args=self._publish_args(event, data)))

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
        state = self._async_client()
        result = await state.publish(keys=self.keys(run_id), args=self._publish_args(event, data))
        event_id = self._checked(run_id, result)
        if self._needs_compaction(result):
            await self._compact_async(state, run_id, int(result[1]))
        return event_id

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
        keys = self.keys(run_id)
        cursor = _parse_stream_id(last_event_id)
        if last_event_id is not None and (cursor is None or max(cursor) > _MAX_PART):
            # Not an id at all, or larger than any Redis id can be.
            yield unknown_id_item(run_id, last_event_id, None)
            return
        checked = last_event_id is None
        # Blocking reads must return before the client's socket timeout fires.
        socket_timeout = state.client.connection_pool.connection_kwargs.get("socket_timeout")
        block_slice = min(2.0, socket_timeout / 2) if socket_timeout else 2.0
        loop = asyncio.get_running_loop()
        while True:
            start = "-" if cursor is None else f"({_fmt(cursor)}"
            reply = await state.read(keys=keys, args=[start, _READ_BATCH, "" if cursor is None else _fmt(cursor)])
            if reply is None:
                yield StreamItem(END, None)
                return
            last_generated, first_id, last_id, entries, ended, raw_segments = reply
            segments = [from_json(json.loads(raw)) for raw in raw_segments]
            if not checked:
                # An id this run never issued: above the last one, or below the first one.
                earliest = segments[0].first if segments else _parse_stream_id(first_id)
                if cursor > _parse_stream_id(last_generated) or earliest is None or cursor < earliest:
                    yield unknown_id_item(run_id, last_event_id, last_id or None)
                    return
                checked = True
            for item in replay(segments, cursor):
                if isinstance(item, Lost):
                    earliest = next((_fmt(s.first) for s in segments if not isinstance(s, Lost)), first_id or None)
                    yield gap_item(run_id, last_event_id, earliest, last_id or None)
                    return
                yield item
                cursor = _parse_stream_id(item.id)
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
                # Resumed after the `end` entry itself: nothing will come, so end now (under
                # its id, as the memory bridge does).
                yield StreamItem(END, None, last_id or None)
                return
            # XREAD is only the wake-up; the next atomic read decides what is delivered, so
            # entries compacted while we waited come as segments rather than a silent hole.
            after = "0-0" if cursor is None else _fmt(cursor)
            deadline = None if heartbeat is None else loop.time() + heartbeat
            woke = False
            while True:
                wait = block_slice if deadline is None else min(block_slice, deadline - loop.time())
                if wait < 0.001:
                    break
                if await state.client.xread({keys[0]: after}, count=1, block=_ms(wait)):
                    woke = True
                    break
                if deadline is None:
                    break  # re-read anyway: the stream may have expired meanwhile
            if not woke and heartbeat is not None:
                yield StreamItem(HEARTBEAT, None)


_pending_closes: set[asyncio.Task] = set()
