"""A loopback server speaking OpenAI's ``POST /v1/embeddings``, for the real ``openai`` client.

Its vectors stand in for a real model's: each word is hashed into one of ``DIMENSIONS``
buckets after a small synonym table maps it to its concept, so "vacation" and "holiday" land
together (what an embedding model gives and full-text search cannot)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMENSIONS = 64
CONCEPTS = {"vacation": "holiday", "vacations": "holiday", "holidays": "holiday", "leave": "holiday", "pto": "holiday",
            "salary": "pay", "wage": "pay", "wages": "pay", "paid": "pay", "car": "vehicle", "cars": "vehicle"}


def embed(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        word = CONCEPTS.get(word, word)
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    return vector


class FakeEmbeddings:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.down = False
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                owner.requests.append(body)
                if owner.down or not self.path.rstrip("/").endswith("/embeddings"):
                    return self._json(503 if owner.down else 404, {"error": {"message": "unavailable", "type": "server_error"}})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = []
                for i, text in enumerate(texts):
                    vector = embed(text)
                    if body.get("encoding_format") == "base64":  # what the openai client asks for by default
                        value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                    else:
                        value = vector
                    data.append({"object": "embedding", "index": i, "embedding": value})
                self._json(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})

            def _json(self, status, payload):
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeEmbeddings:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
