"""Bounded capture of command output: keep the head and the tail, count what was cut.

A model gains little from the middle of a 50 MB build log and loses its context window to
it; the start (what ran) and the end (how it failed) are what it needs.
"""

from __future__ import annotations

import codecs
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from harness.sandbox.env_policy import mask_partial_edges, mask_secrets


@dataclass(frozen=True)
class BoundedText:
    head: str
    tail: str
    omitted_chars: int

    def render(self, secrets: Mapping[str, str] | None = None) -> str:
        head, tail = mask_secrets(self.head, secrets), mask_secrets(self.tail, secrets)
        if not self.omitted_chars:
            return head + tail
        head, tail = mask_partial_edges(head, tail, secrets)
        return f"{head}\n\n[... {self.omitted_chars} characters of output omitted ...]\n\n{tail}"


class OutputCapture:
    """Thread-safe sink for a byte stream that keeps at most ``limit`` characters.

    Decoding is incremental so a multi-byte character split across two reads is not
    turned into replacement characters.
    """

    def __init__(self, limit: int):
        self._half = max(limit // 2, 1)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._omitted = 0
        self._lock = threading.Lock()
        self._closed = False

    def feed(self, data: bytes, final: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._add(self._decoder.decode(data, final))

    def _add(self, text: str) -> None:
        room = self._half - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > self._half:
            excess = self._tail_len - self._half
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_len -= len(first)
                self._omitted += len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_len -= excess
                self._omitted += excess

    def close(self) -> BoundedText:
        """Freeze the capture; later data (from a process still running) is discarded."""
        with self._lock:
            if not self._closed:
                self._add(self._decoder.decode(b"", True))
                self._closed = True
            return BoundedText("".join(self._head), "".join(self._tail), self._omitted)


def bound_text(text: str, limit: int) -> BoundedText:
    if len(text) <= limit:
        return BoundedText(text, "", 0)
    half = max(limit // 2, 1)
    return BoundedText(text[:half], text[-half:], len(text) - 2 * half)
