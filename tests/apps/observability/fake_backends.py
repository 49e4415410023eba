"""A loopback stand-in for the tracing backends' ingestion APIs (LangSmith's /runs/*, and
Langfuse's OTLP endpoint /api/public/otel/v1/traces). It records every request, body
decompressed, and answers 200 — or, with ``hang`` set, holds each request until released."""

from __future__ import annotations

import gzip
import threading
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    method: str
    path: str
    headers: dict  # names in lower case
    body: bytes


def _decompress(body: bytes, encoding: str) -> bytes:
    encoding = (encoding or "").lower()
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    if encoding == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    return body


class FakeBackend:
    def __init__(self, *, hang: bool = False):
        self.received: list[Received] = []
        self.hang = hang
        self.release = threading.Event()
        self.arrived = threading.Condition()
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                with backend.arrived:
                    backend.received.append(Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                                                     _decompress(raw, self.headers.get("Content-Encoding", ""))))
                    backend.arrived.notify_all()
                if backend.hang:
                    backend.release.wait(120)
                body = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET = do_PUT = do_PATCH = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, predicate, timeout: float = 60) -> list[Received]:
        """Until some received request satisfies ``predicate``; those requests."""
        with self.arrived:
            found = self.arrived.wait_for(lambda: any(predicate(r) for r in self.received), timeout)
            assert found, f"no such request arrived; got {[(r.method, r.path) for r in self.received]}"
            return [r for r in self.received if predicate(r)]

    def all_bodies(self) -> bytes:
        with self.arrived:
            return b"\n".join(r.body for r in self.received)

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
