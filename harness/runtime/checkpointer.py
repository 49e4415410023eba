"""LangGraph checkpointers from a URL: ``sqlite:///path`` or ``postgresql://…``.

The server passes its CHECKPOINTER_URL; the embedded client may pass any URL or saver.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from harness.runtime.serde_cache import CachingSerializer
from harness.runtime.sqlite_lock import WriteLock, lockable

T = TypeVar("T")


@dataclass(frozen=True)
class CheckpointerTarget:
    backend: str  # "sqlite" | "postgres"
    location: str  # file path or connection URL


def parse_checkpointer_url(url: str) -> CheckpointerTarget:
    scheme = urlparse(url).scheme
    if scheme == "sqlite":
        path = url.removeprefix("sqlite://")
        path = path[1:] if path.startswith("//") else path  # sqlite:////abs -> //abs -> /abs
        return CheckpointerTarget("sqlite", path or ":memory:")
    if scheme in {"postgres", "postgresql"}:
        return CheckpointerTarget("postgres", url)
    raise ValueError(f"unsupported checkpointer URL scheme {scheme!r}; use sqlite:///path or postgresql://…")


def ping(url: str, timeout: float = 3.0) -> None:
    """Raise when the checkpointer store cannot be reached; return quietly when it can."""
    target = parse_checkpointer_url(url)
    if target.backend == "sqlite":
        if target.location != ":memory:":
            Path(target.location).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(target.location, timeout=timeout)
        try:
            conn.execute("select 1").fetchone()
        finally:
            conn.close()
        return
    import psycopg

    with psycopg.connect(target.location, connect_timeout=max(1, int(timeout))) as conn:
        conn.execute("select 1").fetchone()


def _sqlite_saver(location: str) -> ThreadedSqliteSaver:
    if location != ":memory:":
        Path(location).parent.mkdir(parents=True, exist_ok=True)
    return ThreadedSqliteSaver(sqlite3.connect(location, timeout=20, check_same_thread=False), location, serde=CachingSerializer())


@contextlib.asynccontextmanager
async def open_checkpointer(url: str) -> AsyncIterator[BaseCheckpointSaver]:
    """An async saver with its tables created, closed on exit."""
    target = parse_checkpointer_url(url)
    if target.backend == "sqlite":
        saver = _sqlite_saver(target.location)
        try:
            await saver.run(saver.setup)
            # WAL (set by setup) with NORMAL sync: a commit no longer waits for an fsync,
            # and the file still cannot be corrupted by a crash. The WAL is folded back every
            # 1 MB and cut back to 1 MB after, instead of SQLite's 4 MB kept on disk for good.
            for pragma in ("synchronous=NORMAL", "wal_autocheckpoint=256", "journal_size_limit=1048576"):
                await saver.run(saver.conn.execute, f"PRAGMA {pragma}")
            yield saver
        finally:
            await saver.aclose()
        return
    saver = await _reconnecting_postgres_saver(target.location)
    try:
        await _setup_serialized(saver)
        yield saver
    finally:
        await saver.conn.close()


def open_sync_checkpointer(url: str) -> BaseCheckpointSaver:
    """A saver for a process without an event loop of its own (the embedded client), on the
    same store and tables the server uses: SQLite works from sync and async code (the same
    ``ThreadedSqliteSaver`` the server runs); PostgreSQL is LangGraph's sync saver (the
    client's sync methods; pass an ``AsyncPostgresSaver`` for ``astream``)."""
    target = parse_checkpointer_url(url)
    if target.backend == "sqlite":
        saver = _sqlite_saver(target.location)
        saver.setup()
        return saver
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    saver = PostgresSaver(Connection.connect(target.location, autocommit=True, prepare_threshold=0, row_factory=dict_row),
                          serde=CachingSerializer())
    saver.setup()
    return saver


# Any number all our processes agree on. Servers and workers starting together on a new
# database would otherwise run LangGraph's CREATE TABLEs at once, which PostgreSQL refuses
# ("duplicate key value violates unique constraint pg_type_typname_nsp_index").
_SETUP_LOCK = 0x44_45_45_52_46  # "DEERF"


async def _setup_serialized(saver: BaseCheckpointSaver) -> None:
    import asyncio

    # Tried, not waited for: a session blocked in pg_advisory_lock is an open transaction, and
    # the holder's CREATE INDEX CONCURRENTLY waits for every open transaction (a deadlock).
    delay = 0.02
    while True:
        async with saver.conn.cursor() as cursor:  # an autocommit connection: a session-level lock
            await cursor.execute("SELECT pg_try_advisory_lock(%s) AS got", (_SETUP_LOCK,))
            if (await cursor.fetchone())["got"]:
                break
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)
    try:
        await saver.setup()
    finally:
        async with saver.conn.cursor() as cursor:
            await cursor.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))


# This task's last pre-run read: (checkpoint key, tuple); see ThreadedSqliteSaver.prime.
_primed: contextvars.ContextVar[tuple[tuple, CheckpointTuple | None] | None] = contextvars.ContextVar(
    "deerflow_primed_checkpoint", default=None)


def _tuple_key(config: dict) -> tuple:
    conf = config.get("configurable") or {}
    return conf.get("thread_id"), conf.get("checkpoint_ns", ""), conf.get("checkpoint_id")


def _settle(outcomes: list) -> None:
    for future, result, exc in outcomes:
        if future.done():  # cancelled while it ran
            continue
        if exc is None:
            future.set_result(result)
        else:
            future.set_exception(exc)


class ThreadedSqliteSaver(SqliteSaver):
    """LangGraph's SQLite saver whose async methods run each operation whole on one thread
    of its own.

    LangGraph's AsyncSqliteSaver goes through aiosqlite, which hands every cursor, execute,
    fetch, close and commit to its thread separately: 36 hand-offs to the event loop per
    run of the lead agent. Here a write or a read is one hand-off, and the operations stay
    serialized on one connection as before.

    Operations asked for in the same turn of the loop share one hand-off: a run's exit
    writes its anchor checkpoint and its delta writes together, three hops that became one.
    Each operation is still its own transaction, run in the order asked, with its own
    result or error. And the pre-run read of a thread's head (``prime``) answers LangGraph's
    read of the same head a moment later, when nothing can have written in between.
    """

    def __init__(self, conn: sqlite3.Connection, path: str, **kwargs: Any):
        super().__init__(conn, **kwargs)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpointer")
        self._write_lock = WriteLock(path, timeout=20.0) if lockable(path) else None
        # Per event loop: each batch's results go back to the loop that asked.
        self._queued: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, Callable[..., Any], tuple]]] = {}

    @contextlib.contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        # Writes queue for the file's write lock; serializing the checkpoint happened before.
        if not transaction or self._write_lock is None:
            with super().cursor(transaction) as cur:
                yield cur
            return
        self._write_lock.acquire()
        try:
            with super().cursor(transaction) as cur:
                yield cur
        finally:
            self._write_lock.release()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        queued = self._queued.get(loop)
        if queued is None:
            queued = self._queued[loop] = []
            # After the callbacks already due this turn, which may queue more operations.
            loop.call_soon(self._hand_off, loop)
        queued.append((future, fn, args))
        return await future

    def _hand_off(self, loop: asyncio.AbstractEventLoop) -> None:
        batch = self._queued.pop(loop)
        try:
            self._executor.submit(self._run_batch, loop, batch)
        except RuntimeError as exc:  # shut down (the process is stopping)
            for future, _fn, _args in batch:
                if not future.done():
                    future.set_exception(exc)

    @staticmethod
    def _run_batch(loop: asyncio.AbstractEventLoop, batch: list) -> None:
        outcomes = []
        for future, fn, args in batch:
            if future.cancelled():  # its caller gave up before the thread got to it
                continue
            try:
                outcomes.append((future, fn(*args), None))
            except BaseException as exc:  # handed to the caller, as run_in_executor does
                outcomes.append((future, None, exc))
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is waiting
            loop.call_soon_threadsafe(_settle, outcomes)

    def prime(self, config: dict, found: CheckpointTuple | None) -> None:
        """``found`` was just read for ``config`` by this task: its next read of the same
        checkpoint gets it without a query (once). For the run's own pre-run read, which
        LangGraph repeats as the run starts, with the thread held by the run meanwhile."""
        _primed.set((_tuple_key(config), found))

    async def aclose(self) -> None:
        try:
            await self.run(self.conn.close)
            if self._write_lock is not None:
                self._write_lock.close()
        finally:
            self._executor.shutdown(wait=False)

    async def aget_tuple(self, config: dict) -> CheckpointTuple | None:
        primed = _primed.get()
        if primed is not None:
            _primed.set(None)
            if primed[0] == _tuple_key(config):
                return primed[1]
        return await self.run(self.get_tuple, config)

    async def alist(self, config: dict | None, *, filter: dict[str, Any] | None = None, before: dict | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        # Read whole in the thread: the sync generator holds the saver's lock while it yields.
        rows = await self.run(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for row in rows:
            yield row

    async def aput(self, config: dict, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> dict:
        return await self.run(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: dict, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        await self.run(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.run(self.delete_thread, thread_id)

    async def aget_delta_channel_history(self, *, config: dict, channels: Sequence[str]) -> Mapping[str, Any]:
        return await self.run(lambda: self.get_delta_channel_history(config=config, channels=channels))


async def _reconnecting_postgres_saver(url: str) -> BaseCheckpointSaver:
    """LangGraph's AsyncPostgresSaver on one connection (as ``from_conn_string`` opens it),
    replaced when the database dropped it: a restart, a failover or a query cut off mid-way
    would otherwise fail every later run of the process. Looking at the connection's state
    costs nothing; the operation that first meets a dead connection still fails. (A checked pool
    would heal the same way, but cost ~40 ms per run on our test VM: 97.6 ms to `end` against 45.9.)"""
    import asyncio

    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection
    from psycopg.rows import dict_row

    async def connect() -> AsyncConnection:
        return await AsyncConnection.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)

    class ReconnectingPostgresSaver(AsyncPostgresSaver):
        _reconnecting: asyncio.Lock

        @contextlib.asynccontextmanager
        async def _cursor(self, *, pipeline: bool = False):  # every query goes through here
            if self.conn.closed or self.conn.broken:
                async with self._reconnecting:
                    if self.conn.closed or self.conn.broken:
                        dead, self.conn = self.conn, await connect()
                        await dead.close()
            async with super()._cursor(pipeline=pipeline) as cursor:
                yield cursor

    saver = ReconnectingPostgresSaver(conn=await connect(), serde=CachingSerializer())
    saver._reconnecting = asyncio.Lock()  # one per saver, made on the loop that uses it
    return saver
