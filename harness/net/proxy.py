"""A local HTTP proxy that puts every connection through the SSRF guard: the only way out for
the browser tool's Chromium (a TCP port on loopback) and for container sandboxes with
``allow_network`` (a Unix socket mounted into the container, harness/sandbox/egress.py).

Chromium is started with this proxy for every scheme and with the implicit loopback bypass
removed, so each navigation, redirect hop, subresource, WebSocket and download is a new
request the proxy sees. Checking in the proxy rather than in Playwright's request routing
matters: a routed request's redirects are followed by the browser without calling the route
again, and a check that resolves a name and then lets Chromium resolve it a second time can be
fooled by DNS rebinding. Here the proxy resolves the host once, refuses the connection if any
address is private, loopback or metadata (unless the operator allow-listed it), and connects
to the address it checked.

Two request forms reach a proxy: ``CONNECT host:port`` (HTTPS and every WebSocket, which
Chromium tunnels) becomes a byte pipe to the checked address; an absolute-form plain HTTP
request is forwarded with ``Connection: close`` and the client connection is closed after the
response, so a kept-alive connection can never carry a second request to another host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from urllib.parse import urlsplit

from harness.net.guard import ALLOWED_SCHEMES, GuardError, GuardPolicy, resolve_checked

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024
CONNECT_TIMEOUT = 15.0
_HOP_HEADERS = (b"proxy-connection", b"connection", b"keep-alive", b"proxy-authorization")


class GuardProxy:
    """``on_block(url, reason)`` is told of each refused request (the tools report the
    navigation's refusal from it)."""

    def __init__(self, policy: GuardPolicy, on_block: Callable[[str, str], None] | None = None) -> None:
        self.policy = policy
        self.on_block = on_block
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, unix_path: str | None = None) -> None:
        """Listen on a free loopback port, or on the Unix socket ``unix_path``."""
        if unix_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(unix_path)
            self._server = await asyncio.start_unix_server(self._serve, unix_path)
            return
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass
        except Exception:  # a broken exchange must never take the proxy down
            logger.exception("guard proxy: exchange failed")
        finally:
            if task is not None:
                self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > MAX_HEAD_BYTES:
            return await _reply(writer, 431, "Request Header Fields Too Large")
        request_line, _, header_block = head.partition(b"\r\n")
        try:
            method, target, version = request_line.decode("latin-1").split(" ", 2)
        except ValueError:
            return await _reply(writer, 400, "Bad Request")
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            host = host.strip("[]")
            shown = f"https://{host}:{port_text}/"
            if not host or not port_text.isdigit():
                return await _reply(writer, 400, "Bad Request")
            upstream = await self._open(host, int(port_text), shown, writer)
            if upstream is None:
                return
            up_reader, up_writer = upstream
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await _pipe_both(reader, writer, up_reader, up_writer)
            return
        parts = urlsplit(target)
        if parts.scheme not in ALLOWED_SCHEMES or not parts.hostname:
            return await _reply(writer, 400, "Bad Request")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        upstream = await self._open(parts.hostname, port, target, writer)
        if upstream is None:
            return
        up_reader, up_writer = upstream
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        headers = [line for line in header_block.split(b"\r\n") if line and line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
        up_writer.write(f"{method} {path} {version}\r\n".encode("latin-1") + b"\r\n".join(headers + [b"Connection: close"]) + b"\r\n\r\n")
        await up_writer.drain()
        await _pipe_both(reader, writer, up_reader, up_writer)

    async def _open(self, host: str, port: int, shown: str, writer: asyncio.StreamWriter):
        try:
            ip = await resolve_checked(host, port, self.policy)
        except GuardError as exc:
            if self.on_block is not None:
                self.on_block(shown, str(exc))
            await _reply(writer, 403, "Forbidden", f"Blocked by the SSRF guard: {exc}")
            return None
        try:
            return await asyncio.wait_for(asyncio.open_connection(str(ip), port), CONNECT_TIMEOUT)
        except (OSError, asyncio.TimeoutError) as exc:
            await _reply(writer, 502, "Bad Gateway", f"cannot connect to {host}:{port}: {exc}")
            return None


async def _reply(writer: asyncio.StreamWriter, status: int, reason: str, body: str = "") -> None:
    data = body.encode()
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(data)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + data)
    with contextlib.suppress(Exception):
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _pipe_both(client_reader, client_writer, up_reader, up_writer) -> None:
    tasks = [asyncio.ensure_future(_pipe(client_reader, up_writer)), asyncio.ensure_future(_pipe(up_reader, client_writer))]
    try:
        # The exchange ends when the server is done answering; the client side closing first
        # (Chromium dropping a tab) ends it too.
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        await asyncio.wait(tasks, timeout=1)
    finally:
        for task in tasks:
            task.cancel()
