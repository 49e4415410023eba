"""A loopback OpenAI-compatible HTTP server for tests and benchmarks.

It listens on a real socket on 127.0.0.1 (port chosen by the OS) and serves
``POST /v1/chat/completions`` (plain JSON or SSE streaming with text deltas, tool-call
argument deltas, ``reasoning_content`` deltas and a usage chunk), and ``GET /v1/models``.
A stream is sent chunked and the connection stays open for the client's next request, as
OpenAI's API does; ``request_peers`` shows which connection each request came on.
Replies come from a script of :class:`~harness.testing.script.Reply` objects, so the same
script can drive :class:`~harness.testing.ScriptedChatModel` or the real ``ChatOpenAI``
client pointed at this server. A ``Reply(status=429)`` answers with that HTTP error,
``Reply(delay=2.0)`` waits before answering (for timeout tests); ``Reply(hold=event)`` until the
test sets the event.

``quirks`` makes the server misbehave the way real providers do, for the model probe:
``no_usage`` (no token counts), ``broken_stream`` (a stream that ends before any text, its
connection closed), ``requires_reasoning_content`` (400 when an assistant turn comes back
without its ``reasoning_content``, as DeepSeek-style thinking APIs answer on the second turn).

Usage::

    with LoopbackOpenAIServer(["Hello!"]) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="x", model="m")
        model.invoke("hi")
        server.requests[0]["messages"]     # what the client sent

When the script runs out the server answers 500 with a message saying so, which the
test sees as a provider error rather than a hang.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.testing.script import Reply, Script, ScriptItem, rough_tokens, split_text


class _Server(ThreadingHTTPServer):
    # Benchmarks open hundreds of connections at once; the default backlog of 5 would make
    # the kernel drop and retry most of them, which would be measured as server latency.
    request_queue_size = 1024


class LoopbackOpenAIServer:
    QUIRKS = frozenset({"no_usage", "broken_stream", "requires_reasoning_content"})

    def __init__(self, script: Sequence[ScriptItem] = (), *, loop: bool = False, model_ids: Sequence[str] = ("test-model",),
                 quirks: Sequence[str] = ()) -> None:
        unknown = set(quirks) - self.QUIRKS
        if unknown:
            raise ValueError(f"unknown quirks {sorted(unknown)}; known: {sorted(self.QUIRKS)}")
        self.quirks = set(quirks)
        self._script = Script(script, loop=loop)
        self.model_ids = list(model_ids)
        self.requests: list[dict[str, Any]] = []
        # Wall-clock time (time.time()) each request of ``requests`` arrived, before its body
        # was read: benchmarks compare it with a browser's clock (benchmarks/first_message.py).
        self.request_times: list[float] = []
        # The client's (host, port) of each request's connection: how many it opened.
        self.request_peers: list[tuple[str, int]] = []
        self._stopping = threading.Event()
        # Kept-alive connections outlive the listening socket: stop() closes them, so that a
        # stopped server answers nothing more.
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> LoopbackOpenAIServer:
        handler = _make_handler(self)
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="loopback-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        with self._open_lock:
            for connection in self._open:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LoopbackOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def add(self, *items: ScriptItem) -> None:
        self._script.extend(items)

    def reset(self, *items: ScriptItem) -> None:
        """Replace the script and forget recorded requests (one server shared by many tests)."""
        self._script = Script(list(items))
        self.requests.clear()
        self.request_times.clear()
        self.request_peers.clear()

    @property
    def remaining(self) -> int:
        return self._script.remaining

    def _record(self, body: dict[str, Any], arrived: float) -> None:
        self.request_times.append(arrived)
        self.requests.append(body)

    def _next(self, body: dict[str, Any], arrived: float) -> Reply | None:
        self._record(body, arrived)
        return self._script.next(body.get("messages") or [])

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _hold(self, hold: threading.Event | None) -> None:
        while hold is not None and not hold.is_set() and not self._stopping.is_set():
            hold.wait(0.1)


def _completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:16]}"


def _usage(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    given = reply.usage or {}
    prompt = given.get("input_tokens")
    if prompt is None:
        prompt = sum(rough_tokens(json.dumps(m.get("content"))) for m in body.get("messages") or [])
    completion = given.get("output_tokens")
    if completion is None:
        completion = rough_tokens(reply.text) + sum(rough_tokens(t.args_json()) for t in reply.tool_calls)
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if given.get("cache_read"):
        usage["prompt_tokens_details"] = {"cached_tokens": given["cache_read"]}
    return usage


def _make_handler(server: LoopbackOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            return

        def handle(self) -> None:
            with server._open_lock:
                server._open.add(self.connection)
            try:
                if not server._stopping.is_set():  # one accepted as stop() began is closed on return
                    super().handle()
            except (ConnectionResetError, BrokenPipeError):
                pass  # a client let go of its kept-alive connection (its loop closed)
            finally:
                with server._open_lock:
                    server._open.discard(self.connection)

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "loopback"} for m in server.model_ids]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            arrived = time.time()
            server.request_peers.append(self.client_address[:2])
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._json(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
                return
            if "requires_reasoning_content" in server.quirks and any(
                    m.get("role") == "assistant" and not m.get("reasoning_content") for m in body.get("messages") or []):
                server._record(body, arrived)
                self._json(400, {"error": {"message": "The reasoning_content in the thinking mode must be passed back to the API.",
                                           "type": "invalid_request_error", "code": "invalid_request_error"}})
                return
            reply = server._next(body, arrived)
            if reply is None:
                self._json(500, {"error": {"message": "loopback server: the script has no reply left", "type": "server_error"}})
                return
            server._wait(reply.delay)
            server._hold(reply.hold)
            try:
                if reply.status != 200:
                    kind = "rate_limit_error" if reply.status == 429 else "server_error"
                    self._json(reply.status, {"error": {"message": reply.error_message, "type": kind, "code": str(reply.status)}})
                elif body.get("stream"):
                    self._stream(reply, body)
                else:
                    self._complete(reply, body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test); nothing to tell it

        def _complete(self, reply: Reply, body: dict[str, Any]) -> None:
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or (None if reply.tool_calls else "")}
            if reply.reasoning:
                message["reasoning_content"] = reply.reasoning
            if reply.tool_calls:
                message["tool_calls"] = [
                    {"id": t.call_id(), "type": "function", "function": {"name": t.name, "arguments": t.args_json()}}
                    for t in reply.tool_calls
                ]
            self._json(200, {
                "id": _completion_id(), "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "loopback"),
                "choices": [{"index": 0, "message": message, "finish_reason": reply.effective_finish_reason}],
                **({} if "no_usage" in server.quirks else {"usage": _usage(reply, body)}),
            })

        def _stream(self, reply: Reply, body: dict[str, Any]) -> None:
            cid, created, model = _completion_id(), int(time.time()), body.get("model", "loopback")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            broken = "broken_stream" in server.quirks
            if broken:
                self.send_header("Connection", "close")
            else:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def write(data: bytes) -> None:
                self.wfile.write(data if broken else b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def emit(delta: dict[str, Any] | None, finish: str | None = None, usage: dict[str, Any] | None = None) -> None:
                chunk: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                                         "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}
                if usage is not None:
                    chunk["usage"] = usage
                write(b"data: " + json.dumps(chunk).encode() + b"\n\n")

            emit({"role": "assistant", "content": ""})
            if broken:  # the connection drops before any text
                self.close_connection = True
                return
            if reply.reasoning:
                for piece in split_text(reply.reasoning, reply.chunk_size):
                    emit({"reasoning_content": piece})
            for piece in split_text(reply.text, reply.chunk_size):
                emit({"content": piece})
            for index, spec in enumerate(reply.tool_calls):
                args = spec.args_json()
                emit({"tool_calls": [{"index": index, "id": spec.call_id(), "type": "function", "function": {"name": spec.name, "arguments": ""}}]})
                for piece in split_text(args, max(reply.chunk_size, 8)):
                    emit({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            emit({}, finish=reply.effective_finish_reason)
            if (body.get("stream_options") or {}).get("include_usage") and "no_usage" not in server.quirks:
                emit(None, usage=_usage(reply, body))
            write(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler
