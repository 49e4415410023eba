"""A local Slack for the Slack adapter tests: the Web API over HTTP and a Socket Mode websocket.

It speaks what the real platform speaks, so the unmodified slack_sdk / slack-bolt clients run
against it: Web API methods answer ``{"ok": ...}`` JSON to form, query or JSON bodies with a
bearer token; ``apps.connections.open`` (app token only) hands out the websocket URL; the
socket greets with ``hello`` and delivers ``events_api`` envelopes that the client must ack
by ``envelope_id``; files upload v2 goes getUploadURLExternal → POST bytes to the upload URL →
completeUploadExternal; ``url_private`` downloads need the bot token.

Runs on 127.0.0.1 in a thread with its own loop; tests read ``calls`` and use ``deliver``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

BOT_TOKEN = "xoxb-test-bot-token"
APP_TOKEN = "xapp-test-app-token"
BOT_USER = "UBOT"
TEAM = "T0TEAM"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    token: str


@dataclass
class FakeSlack:
    url: str = ""
    calls: list[Call] = field(default_factory=list)
    acks: list[str] = field(default_factory=list)
    uploads: dict[str, bytes] = field(default_factory=dict)  # file id → bytes posted to its upload URL
    hosted: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # file id → (name, bytes) for url_private
    download_auth: list[str] = field(default_factory=list)  # Authorization headers seen on url_private
    connections_opened: int = 0
    fail_connections_open: int = 0  # answer this many apps.connections.open with an outage first

    def __post_init__(self) -> None:
        self._sockets: list[web.WebSocketResponse] = []
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None

    # -- test side ---------------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def host_file(self, name: str, data: bytes, mimetype: str = "text/plain") -> dict[str, Any]:
        """A file object as Slack puts it in a ``file_share`` message event."""
        file_id = f"F{next(self._ids):06d}"
        self.hosted[file_id] = (name, data)
        link = f"{self.url}/files-pri/{TEAM}-{file_id}/{name}"
        return {"id": file_id, "name": name, "title": name, "mimetype": mimetype, "filetype": name.rsplit(".", 1)[-1],
                "size": len(data), "url_private": link, "url_private_download": f"{link}?download=1", "mode": "hosted"}

    def deliver(self, event: dict[str, Any], *, timeout: float = 10) -> str:
        """Push one Events API payload over the socket; returns once the client acked it."""
        envelope_id = f"env-{next(self._ids)}"
        payload = {"token": "legacy", "team_id": TEAM, "api_app_id": "A0APP", "event": event, "type": "event_callback",
                   "event_id": f"Ev{next(self._ids):08d}", "event_time": int(time.time()),
                   "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]}
        envelope = {"envelope_id": envelope_id, "type": "events_api", "payload": payload,
                    "accepts_response_payload": False, "retry_attempt": 0, "retry_reason": ""}
        self._send(envelope, timeout)
        self.wait_for(lambda: envelope_id in self.acks, timeout=timeout, what=f"the ack of {envelope_id}")
        return envelope_id

    def deliver_command(self, text: str, *, user: str, channel: str, command: str = "/deerflow", timeout: float = 10) -> str:
        """A slash command as Socket Mode delivers it (``slash_commands`` envelope)."""
        envelope_id = f"env-{next(self._ids)}"
        payload = {"token": "legacy", "team_id": TEAM, "team_domain": "test", "channel_id": channel, "channel_name": "directmessage",
                   "user_id": user, "user_name": user.lower(), "command": command, "text": text, "api_app_id": "A0APP",
                   "response_url": f"{self.url}/commands/respond", "trigger_id": f"trig-{next(self._ids)}"}
        self._send({"envelope_id": envelope_id, "type": "slash_commands", "payload": payload, "accepts_response_payload": True}, timeout)
        self.wait_for(lambda: envelope_id in self.acks, timeout=timeout, what=f"the ack of {envelope_id}")
        return envelope_id

    def _send(self, envelope: dict[str, Any], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self._sockets:
            if time.monotonic() > deadline:
                raise AssertionError("no Socket Mode client connected")
            time.sleep(0.02)
        asyncio.run_coroutine_threadsafe(self._sockets[-1].send_str(json.dumps(envelope)), self._loop).result(timeout)

    def event_payload(self, event: dict[str, Any]) -> dict[str, Any]:
        return {"token": "legacy", "team_id": TEAM, "api_app_id": "A0APP", "event": event, "type": "event_callback",
                "event_id": f"Ev{next(self._ids):08d}", "event_time": int(time.time())}

    def new_ts(self) -> str:
        return f"{1_700_000_000 + next(self._ts)}.000100"

    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, predicate, *, timeout: float = 20, what: str = "the condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = predicate()
            if result:
                return result
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}; calls: {[(c.method, c.args) for c in self.calls]}")

    def drop_sockets(self) -> None:
        """Close every socket from the server side, as Slack does on a refresh or an outage."""
        async def _close() -> None:
            for ws in list(self._sockets):
                await ws.close()
        asyncio.run_coroutine_threadsafe(_close(), self._loop).result(5)

    # -- server side -------------------------------------------------------------------------

    async def _args(self, request: web.Request) -> dict[str, Any]:
        args: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            args.update(await request.json())
        elif request.can_read_body:
            args.update(dict(await request.post()))
        return args

    def _record(self, method: str, args: dict[str, Any], token: str) -> None:
        with self._lock:
            self.calls.append(Call(method, args, token))

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        args = await self._args(request)
        if method == "apps.connections.open":
            if token != APP_TOKEN:
                return web.json_response({"ok": False, "error": "invalid_auth"})
            self.connections_opened += 1
            if self.fail_connections_open > 0:
                self.fail_connections_open -= 1
                return web.json_response({"ok": False, "error": "service_unavailable"}, status=503)
            return web.json_response({"ok": True, "url": f"{self.url.replace('http', 'ws', 1)}/link/?ticket=t{self.connections_opened}"})
        if token != BOT_TOKEN:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        self._record(method, args, token)
        if method == "auth.test":
            return web.json_response({"ok": True, "url": "https://test.slack.com/", "team": "Test", "user": "deerflow",
                                      "team_id": TEAM, "user_id": BOT_USER, "bot_id": "B0BOT", "is_enterprise_install": False})
        if method == "chat.postMessage":
            ts = self.new_ts()
            return web.json_response({"ok": True, "channel": args.get("channel"), "ts": ts,
                                      "message": {"text": args.get("text"), "ts": ts, "thread_ts": args.get("thread_ts")}})
        if method == "chat.update":
            return web.json_response({"ok": True, "channel": args.get("channel"), "ts": args.get("ts"), "text": args.get("text")})
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ids):06d}"
            return web.json_response({"ok": True, "upload_url": f"{self.url}/upload/v1/{file_id}", "file_id": file_id})
        if method == "files.completeUploadExternal":
            files = json.loads(args["files"]) if isinstance(args.get("files"), str) else args.get("files")
            return web.json_response({"ok": True, "files": [{"id": f["id"], "title": f.get("title")} for f in files]})
        return web.json_response({"ok": False, "error": "unknown_method"})

    async def _upload(self, request: web.Request) -> web.Response:
        self.uploads[request.match_info["file_id"]] = await request.read()
        return web.Response(text="OK - uploaded")

    async def _private(self, request: web.Request) -> web.Response:
        self.download_auth.append(request.headers.get("Authorization", ""))
        if request.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
            # Slack answers an unauthenticated url_private with its HTML login page, not a 401.
            return web.Response(text="<html>sign in</html>", content_type="text/html")
        file_id = request.match_info["ref"].split("-", 1)[1]
        name, data = self.hosted[file_id]
        return web.Response(body=data, content_type="application/octet-stream")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": len(self._sockets),
                                      "debug_info": {"host": "fake", "approximate_connection_time": 3600},
                                      "connection_info": {"app_id": "A0APP"}}))
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    data = json.loads(msg.data)
                    if "envelope_id" in data:
                        self.acks.append(data["envelope_id"])
        finally:
            if ws in self._sockets:
                self._sockets.remove(ws)
        return ws

    def start(self) -> FakeSlack:
        ready = threading.Event()

        def _serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_post("/api/{method}", self._api)
            app.router.add_get("/api/{method}", self._api)
            app.router.add_post("/upload/v1/{file_id}", self._upload)
            app.router.add_get("/files-pri/{ref}/{name}", self._private)
            app.router.add_get("/link/", self._socket)
            self._runner = web.AppRunner(app)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            port = site._server.sockets[0].getsockname()[1]
            self.url = f"http://127.0.0.1:{port}"
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=_serve, name="fake-slack", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return

        async def _shutdown() -> None:
            for ws in list(self._sockets):
                await ws.close()
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(_shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
