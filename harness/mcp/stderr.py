"""What a stdio MCP server writes to stderr, kept so its error can say why it died.

The server's stderr is a pipe read on the MCP loop (no thread, no file that grows): each
line is logged at debug level under ``harness.mcp.stderr`` and the last few kilobytes are
kept. When the process is gone, :meth:`StderrTail.finish` waits for the pipe's end (bounded:
a grandchild may still hold it open) and :meth:`StderrTail.text` gives its last lines.
"""

from __future__ import annotations

import asyncio
import logging
import os

logger = logging.getLogger("harness.mcp.stderr")

TAIL_CHARS = 2000
_KEEP_BYTES = 4 * TAIL_CHARS
# How long a finished process's last bytes may take to arrive through the pipe.
DRAIN_SECONDS = 2.0


class _Reader(asyncio.Protocol):
    def __init__(self, tail: StderrTail) -> None:
        self.tail = tail

    def data_received(self, data: bytes) -> None:
        self.tail.feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.tail.feed(b"\n")
        self.tail.closed.set()


class StderrTail:
    def __init__(self, server: str) -> None:
        self.server = server
        self.closed = asyncio.Event()
        self._kept = bytearray()
        self._line = bytearray()
        read_fd, write_fd = os.pipe()
        # The child's stderr; the parent's copy is closed once the child has it, so the pipe
        # ends when the process (and whatever it started) is gone.
        self.child_end = os.fdopen(write_fd, "w")
        self._read = os.fdopen(read_fd, "rb", buffering=0)
        self._transport: asyncio.BaseTransport | None = None

    async def start(self) -> None:
        self._transport, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: _Reader(self), self._read)

    def spawned(self) -> None:
        if not self.child_end.closed:
            self.child_end.close()

    def feed(self, data: bytes) -> None:
        self._kept += data
        if len(self._kept) > 2 * _KEEP_BYTES:
            del self._kept[:-_KEEP_BYTES]
        if logger.isEnabledFor(logging.DEBUG):
            self._line += data
            *lines, rest = self._line.split(b"\n")
            self._line = bytearray(rest[-_KEEP_BYTES:])
            for line in lines:
                if line.strip():
                    logger.debug("%s: %s", self.server, line.decode("utf-8", "replace").rstrip())

    async def finish(self) -> None:
        """After the process exited: read what is left in the pipe, then close it."""
        self.spawned()
        if self._transport is None:
            self._read.close()
            return
        try:
            await asyncio.wait_for(self.closed.wait(), DRAIN_SECONDS)
        except TimeoutError:
            pass
        self._transport.close()

    def text(self) -> str:
        """The last lines written, at most ``TAIL_CHARS`` characters, blank lines dropped."""
        lines = [line.rstrip() for line in self._kept.decode("utf-8", "replace").splitlines() if line.strip()]
        text = "\n".join(lines)
        if len(text) > TAIL_CHARS:
            text = "…" + text[-TAIL_CHARS:].split("\n", 1)[-1]
        return text


def with_stderr(reason: str, tail: StderrTail | None) -> str:
    text = tail.text() if tail is not None else ""
    return f"{reason}\nstderr (last lines):\n{text}" if text else reason
