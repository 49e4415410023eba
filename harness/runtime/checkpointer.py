"""LangGraph checkpointers from a URL: ``sqlite:///path`` or ``postgresql://…``.

The server passes its CHECKPOINTER_URL; the embedded client may pass any URL or saver.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from langgraph.checkpoint.base import BaseCheckpointSaver


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


@contextlib.asynccontextmanager
async def open_checkpointer(url: str) -> AsyncIterator[BaseCheckpointSaver]:
    """An async saver with its tables created, closed on exit."""
    target = parse_checkpointer_url(url)
    if target.backend == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        if target.location != ":memory:":
            Path(target.location).parent.mkdir(parents=True, exist_ok=True)
        async with AsyncSqliteSaver.from_conn_string(target.location) as saver:
            await saver.setup()
            # WAL (set by setup) with NORMAL sync: a commit no longer waits for an fsync,
            # and the file still cannot be corrupted by a crash.
            await saver.conn.execute("PRAGMA synchronous=NORMAL")
            yield saver
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    # A pool rather than one connection: a connection the database dropped (a restart, a
    # failover, a query cut off mid-way) is found by the check on checkout (one empty round
    # trip) and replaced, where a lone connection would fail every later run of the process.
    # The saver serializes its queries, so two connections are plenty. Connection settings
    # as AsyncPostgresSaver.from_conn_string uses them.
    pool = AsyncConnectionPool(target.location, min_size=1, max_size=2, open=False, check=AsyncConnectionPool.check_connection,
                               kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
    async with pool:
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        yield saver
