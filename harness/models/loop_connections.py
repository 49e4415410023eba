"""An OpenAI-SDK model's kept-alive connections, one pool per event loop.

``langchain_openai`` gives every model with the same base URL and timeout one shared async
HTTP client (an ``lru_cache``), and its connection pool keeps each connection open after a
streamed answer, as OpenAI's API and most compatible servers allow. A connection belongs to
the event loop that opened it. Code that calls a model from a new loop each time (the embedded
client's sync methods run each call under ``asyncio.run``) then reuses a connection whose loop
is closed, and the call fails with "Event loop is closed". Servers that close the connection
after each answer never showed it.

Here the transport's connection pool is replaced by one that hands each request to a pool of
the running loop's own, built with the original pool's settings (limits, TLS context, proxy,
socket options) and no connections: a connection opened before is never handed to another
loop. The runs loop, which makes nearly every call of a server, keeps its connections from one
run to the next. Pools of loops that have closed are dropped when a request comes. A client
whose transport or pool is not the shape this knows is left as it is.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from typing import Any, Self

logger = logging.getLogger(__name__)

_MARK = "_deerflow_pool_per_loop"
# What a fresh pool must not share with the one it is copied from: its requests and connections.
_STATE = ("_connections", "_requests", "_optional_thread_lock")


class PerLoop:
    """One ``make()`` per event loop, made on first use from that loop; the values of loops that
    have closed are handed to ``let_go`` (and dropped) when another loop asks."""

    def __init__(self, make: Any, let_go: Any = None) -> None:
        self._make = make
        self._let_go = let_go
        self.values: dict[asyncio.AbstractEventLoop, Any] = {}
        self._lock = threading.Lock()  # loops on several threads may ask at once

    def get(self, loop: asyncio.AbstractEventLoop) -> Any:
        value = self.values.get(loop)
        if value is not None:
            return value
        with self._lock:
            for gone in [other for other in self.values if other.is_closed()]:
                dropped = self.values.pop(gone)  # its connections died with their loop
                if self._let_go is not None:
                    self._let_go(dropped)
            value = self.values.get(loop)
            if value is None:
                value = self.values[loop] = self._make()
            return value

    def pop(self, loop: asyncio.AbstractEventLoop) -> Any:
        with self._lock:
            return self.values.pop(loop, None)


class PoolPerLoop:
    """Stands where the transport keeps its pool; answers what the transport asks of a pool."""

    _deerflow_pool_per_loop = True

    def __init__(self, pool: Any) -> None:
        self._template = pool
        self._pools = PerLoop(self._fresh)

    def _fresh(self) -> Any:
        pool = copy.copy(self._template)
        pool._connections, pool._requests = [], []
        pool._optional_thread_lock = type(self._template._optional_thread_lock)()
        return pool

    async def handle_async_request(self, request: Any) -> Any:
        return await self._pools.get(asyncio.get_running_loop()).handle_async_request(request)

    async def aclose(self) -> None:
        pool = self._pools.pop(asyncio.get_running_loop())
        if pool is not None:
            await pool.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _transports(http_client: Any) -> list[Any]:
    found = [getattr(http_client, "_transport", None), *(getattr(http_client, "_mounts", None) or {}).values()]
    return [t for t in found if t is not None]


def _installable(transport: Any) -> bool:
    pool = getattr(transport, "_pool", None)
    if pool is None or not callable(getattr(pool, "handle_async_request", None)):
        return False
    return getattr(pool, _MARK, False) or all(hasattr(pool, name) for name in _STATE)


def pool_connections_per_loop(model: Any) -> bool:
    """Install on ``model``'s async SDK client; False when it has none or an unknown shape."""
    http_client = getattr(getattr(model, "root_async_client", None), "_client", None)
    if http_client is None:
        return False
    transports = _transports(http_client)
    if not transports or not all(_installable(t) for t in transports):
        logger.debug("model %s: its HTTP transport is not one this knows; connections stay as they are", type(model).__name__)
        return False
    for transport in transports:
        if not getattr(transport._pool, _MARK, False):
            transport._pool = PoolPerLoop(transport._pool)
    return True
