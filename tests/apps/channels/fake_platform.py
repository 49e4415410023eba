"""A loopback HTTP (and websocket) server standing in for a platform's API in adapter tests.

Every request is recorded (method, path, query, headers, raw body) before its handler runs,
so a test asserts on what the adapter actually sent over the wire.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from email import policy
from email.parser import BytesParser
from typing import Any

from aiohttp import web


def json_answer(body: Any, status: int = 200) -> web.Response:
    """JSON with a bare ``application/json`` type, as the platforms send it (discord.py parses
    only that exact type)."""
    return web.Response(body=json.dumps(body).encode(), status=status, headers={"Content-Type": "application/json"})


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, tuple[str | None, bytes]]:
        """A multipart body as {field: (filename, bytes)}."""
        head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
        message = BytesParser(policy=policy.default).parsebytes(head + self.body)
        return {part.get_param("name", header="content-disposition"): (part.get_filename(), part.get_payload(decode=True))
                for part in message.iter_parts()}


@dataclass
class FakePlatform:
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        self.app = web.Application(middlewares=[self._record], client_max_size=64 * 1024 * 1024)
        self._runner: web.AppRunner | None = None
        self.arrived = asyncio.Event()

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body = b"" if request.headers.get("Upgrade", "").lower() == "websocket" else await request.read()
        self.requests.append(Recorded(request.method, request.path, dict(request.query), dict(request.headers), body))
        self.arrived.set()
        return await handler(request)

    def route(self, method: str, path: str, handler: Any) -> None:
        self.app.router.add_route(method, path, handler)

    def json_route(self, method: str, path: str, answer: Any) -> None:
        async def handler(request: web.Request) -> web.Response:
            return json_answer(answer(request) if callable(answer) else answer)

        self.route(method, path, handler)

    async def start(self) -> FakePlatform:
        self._runner = web.AppRunner(self.app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def calls(self, method: str, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path == path]

    async def wait_for(self, method: str, path: str, count: int = 1) -> list[Recorded]:
        """Until ``count`` such requests arrived (the test's own timeout bounds the wait)."""
        while len(self.calls(method, path)) < count:
            self.arrived.clear()
            await self.arrived.wait()
        return self.calls(method, path)


class Inbox:
    """The adapter's sink in tests: collects messages and lets a test await the next one."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self._queue: asyncio.Queue = asyncio.Queue()

    async def __call__(self, message: Any) -> None:
        self.messages.append(message)
        await self._queue.put(message)

    async def next(self, timeout: float = 20) -> Any:
        return await asyncio.wait_for(self._queue.get(), timeout)


class RecordingHooks:
    """AdapterHooks that remember what the adapter reported."""

    def __init__(self) -> None:
        self.connected_as: list[str] = []
        self.errors: list[str] = []
        self.events = 0
        self.changed = asyncio.Event()

    async def connected(self, *, bot_name: str = "") -> None:
        self.connected_as.append(bot_name)
        self.changed.set()

    async def event(self) -> None:
        self.events += 1

    async def error(self, message: str) -> None:
        self.errors.append(message)
        self.changed.set()

    async def load_cursor(self) -> dict:
        return {}

    async def save_cursor(self, cursor: dict) -> None:
        pass

    async def until(self, predicate) -> None:
        while not predicate():
            self.changed.clear()
            await self.changed.wait()
