"""A configured OpenAI-SDK model's async calls through aiohttp, one session per event loop.

The OpenAI SDK sends over httpx by default, whose connection layer (httpcore, h11, anyio)
is pure Python: counted on `make run`'s servers (benchmarks/HISTORY.md, Round 17), a plain
run's one model call spent about 1,800 Python calls in it, some 30 of them for each streamed
chunk. The SDK ships a second transport for exactly this case,
``openai.DefaultAioHttpClient``: the same httpx client API in front of aiohttp, whose HTTP
parser is C. With it a run made 11 % fewer Python calls, and each streamed chunk 14 % fewer.

An aiohttp session belongs to the event loop it was made on, as an httpx pool's connections
do (harness/models/loop_connections.py), and the embedded client's sync methods call models
from a new loop each time. So the transport here keeps one session per loop, made on that
loop when it first sends, and lets the sessions of closed loops go.

Only a model that would get langchain_openai's default async client gets this one: no
``http_client``, ``http_async_client``, ``openai_proxy`` or ``http_socket_options`` of its
own, and no proxy in the environment (httpx reads ``HTTPS_PROXY`` and the like, an aiohttp
session here does not). The socket options are those langchain_openai's default transport
sets (TCP keepalive, so a long silent stream behind a NAT is noticed), and so is the
connection limit and the five seconds an idle connection is kept.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import os
import socket
import urllib.request
import weakref
from typing import Any, Self

from harness.models.loop_connections import PerLoop

logger = logging.getLogger(__name__)

_MARK = "_deerflow_aiohttp_per_loop"
# What a model entry sets when it wants its own HTTP client or connections: left to langchain_openai.
_OWN_CLIENT_KEYS = ("http_client", "http_async_client", "openai_proxy", "http_socket_options")


def _parts() -> tuple[Any, Any, Any] | None:
    """(aiohttp, httpx2, the SDK's aiohttp transport class), or None where the SDK has no aiohttp transport."""
    try:
        import aiohttp
        import httpx2
        from openai._vendor.httpx_aiohttp.transport import AiohttpTransport
    except ImportError:
        return None
    return aiohttp, httpx2, AiohttpTransport


def _socket_options() -> tuple[tuple[int, ...], ...]:
    """The options langchain_openai's default transport sets, its environment switches included."""
    try:
        from langchain_openai.chat_models._client_utils import _default_socket_options
    except ImportError:
        return ()
    return tuple(_default_socket_options())


def _make_socket(options: tuple[tuple[int, ...], ...], addr_info: tuple) -> socket.socket:
    family, kind, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=kind, proto=proto)
    for level, name, value in options:
        try:
            sock.setsockopt(level, name, value)
        except OSError:  # an option this kernel lacks: langchain_openai filters them the same way
            pass
    return sock


class AiohttpPerLoop:
    """An httpx transport that sends through an aiohttp session of the running loop's own."""

    _deerflow_aiohttp_per_loop = True

    def __init__(self, transport_class: Any, aiohttp: Any, ssl_context: Any, limits: Any, options: tuple) -> None:
        self._transport_class = transport_class
        self._aiohttp = aiohttp
        self._ssl_context = ssl_context
        self._limits = limits
        self._options = options
        self._transports = PerLoop(self._transport, _let_go)
        _live.add(self)

    def _session(self) -> Any:
        connector = self._aiohttp.TCPConnector(
            ssl=self._ssl_context, limit=self._limits.max_connections or 0, keepalive_timeout=self._limits.keepalive_expiry,
            socket_factory=functools.partial(_make_socket, self._options) if self._options else None)
        return self._aiohttp.ClientSession(connector=connector)

    def _transport(self) -> Any:
        # verify: the context itself, so that no loop builds a TLS context of its own (tens of ms)
        return self._transport_class(verify=self._ssl_context, limits=self._limits, client=self._session())

    async def handle_async_request(self, request: Any) -> Any:
        return await self._transports.get(asyncio.get_running_loop()).handle_async_request(request)

    async def aclose(self) -> None:
        transport = self._transports.pop(asyncio.get_running_loop())
        if transport is not None:
            await transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _let_go(transport: Any) -> None:
    """A closed loop's session: nothing can be sent or closed on it any more. Detached and its
    connector marked closed, so that neither logs "Unclosed ..." when it is collected; the
    sockets close with their transports."""
    session = getattr(transport, "client", None)
    connector = getattr(session, "connector", None)
    if session is not None and hasattr(session, "detach"):
        session.detach()
    close = getattr(connector, "_close", None)
    if close is not None:
        close()  # with its loop closed it only marks the connector closed


# Every instance, for the close at exit: a session still open when the process ends is logged
# by aiohttp as "Unclosed client session" (an embedded client's last call, a server's runs loop).
_live: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    for per_loop in list(_live):
        for loop, transport in list(per_loop._transports.values.items()):
            try:
                if loop.is_running():  # a server's runs loop, still on its own thread: closed there
                    asyncio.run_coroutine_threadsafe(transport.aclose(), loop).result(timeout=2)
                elif not loop.is_closed():
                    loop.run_until_complete(transport.aclose())
                else:
                    _let_go(transport)
            except Exception:  # a loop that could not close it in time: logged by aiohttp, as it should be
                logger.debug("could not close a model HTTP session at exit", exc_info=True)
        per_loop._transports.values.clear()


def _proxy_in_environment() -> bool:
    return bool(urllib.request.getproxies()) or bool(os.environ.get("OPENAI_PROXY"))


@functools.lru_cache(maxsize=1)
def _shared_client() -> Any | None:
    """One client for every eligible model of the process: the sessions pool per host anyway."""
    parts = _parts()
    if parts is None:
        return None
    aiohttp, httpx2, transport_class = parts
    import openai

    client_class = getattr(openai, "DefaultAioHttpClient", None)
    if client_class is None:
        return None
    limits = openai.DEFAULT_CONNECTION_LIMITS
    transport = AiohttpPerLoop(transport_class, aiohttp, httpx2.create_ssl_context(), limits, _socket_options())
    return client_class(transport=transport, limits=limits)  # the SDK's own defaults (timeout, redirects) with it


def aiohttp_client_for(cls: type, kwargs: dict[str, Any]) -> Any | None:
    """The async HTTP client for a model of class ``cls`` built with ``kwargs``, or None to let
    langchain_openai make its default one."""
    fields = getattr(cls, "model_fields", {})
    if "http_async_client" not in fields or "openai_proxy" not in fields:
        return None  # not a langchain_openai model
    if any(kwargs.get(key) is not None for key in _OWN_CLIENT_KEYS) or _proxy_in_environment():
        return None
    return _shared_client()


def sends_through_aiohttp(model: Any) -> bool:
    http_client = getattr(getattr(model, "root_async_client", None), "_client", None)
    return getattr(getattr(http_client, "_transport", None), _MARK, False)
