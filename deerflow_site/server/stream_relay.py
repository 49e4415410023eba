"""Runs held by another server process of this installation, streamed and cancelled from here.

On the embedded stack (SQLite, in-process runs, no Redis) a run's events live in the memory of
the process that executes it, the one that admitted it. With several server processes behind
one port (``WEB_PROCESSES``), a client's next request may land on another one: a resumed SSE
stream, a join, a websocket reconnecting after a network blip. So each server process listens
on a Unix socket of its own, in a directory the installation's processes share, and a process
asked for a run it does not hold asks its peers; the one holding it streams the run's items
over the socket. A cancel asked of the wrong process goes the same way and takes effect at
once, instead of at the owner's next look at the cancel flags (once a second).

Only what was asked of the wrong process travels here. A run followed where it was started
(``POST .../runs/stream``, the chat's websocket) costs nothing extra.

The protocol is JSON lines: the asker sends one request, the peer answers.

- ``{"op": "subscribe", "run_id", "last_event_id", "heartbeat"}``: ``{"held": false}`` and
  close, or ``{"held": true}`` then one ``{"event", "data", "id"}`` per item until ``end`` or
  ``gap``. The asker closing its end stops the peer's subscription.
- ``{"op": "cancel", "run_id", "action"}``: ``{"cancelled": true|false}``.

A peer that dies mid-stream ends the relayed stream with ``end``, as a run the bridge does not
know would: the client then reads the thread's state, which orphan recovery settles.

It is the embedded default's machinery for several web processes, not the agent's: nothing in
the harness uses it, so it lives with the launcher that makes those processes
(deerflow_site/server/README.md). It still imports no Django: it works on the harness's memory
bridge alone, and apps/runs/runtime.py wires it in.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from harness.runtime.stream_bridge import END, GAP, MemoryStreamBridge, StreamItem

logger = logging.getLogger(__name__)

# How long an asker waits for a peer to say whether it holds a run (a live peer answers at once).
ANSWER_TIMEOUT = 5.0
# Unix socket paths are limited to 108 bytes; a longer home falls back to a temp directory.
_MAX_SOCKET_PATH = 100
# One relayed item is one line: a `values` event of a long thread can be megabytes.
_MAX_LINE = 256 * 1024 * 1024


def relay_directory(home: Path) -> Path:
    """Where this installation's server processes put their sockets."""
    directory = home / "run" / "streams"
    if len(str(directory)) + 16 <= _MAX_SOCKET_PATH:
        return directory
    digest = hashlib.sha256(str(home).encode()).hexdigest()[:16]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"deerflow-streams-{uid}-{digest}"


def _line(message: dict) -> bytes:
    return (json.dumps(message, default=str, separators=(",", ":")) + "\n").encode()


class StreamRelay:
    """A server process's side: answers its peers about the runs its bridge holds."""

    def __init__(self, bridge: MemoryStreamBridge, directory: Path, *, name: str | None = None,
                 on_cancel: Callable[[str, str], bool] | None = None):
        self.bridge = bridge
        self.directory = directory
        self.name = name or str(os.getpid())
        self.on_cancel = on_cancel

    @property
    def path(self) -> Path:
        return self.directory / f"{self.name}.sock"

    def _prepare(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        # A socket left by an earlier process of the same pid (it crashed): ours now.
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def serve_forever(self) -> None:
        await asyncio.to_thread(self._prepare)
        server = await asyncio.start_unix_server(self._handle, path=str(self.path))
        try:
            await asyncio.to_thread(os.chmod, self.path, 0o600)
            async with server:
                await server.serve_forever()
        finally:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = json.loads(await asyncio.wait_for(reader.readline(), ANSWER_TIMEOUT))
            run_id = str(request["run_id"])
            if request.get("op") == "cancel":
                cancelled = bool(self.on_cancel and self.on_cancel(run_id, str(request.get("action") or "interrupt")))
                writer.write(_line({"cancelled": cancelled}))
            elif request.get("op") == "subscribe" and self.bridge.has_run(run_id):
                writer.write(_line({"held": True}))
                await self._stream(run_id, request, reader, writer)
            else:
                writer.write(_line({"held": False}))
            await writer.drain()
        except (OSError, ValueError, KeyError, TypeError, asyncio.TimeoutError) as exc:
            logger.debug("stream relay request ended: %s", exc)
        finally:
            writer.close()

    async def _stream(self, run_id: str, request: dict, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async def forward() -> None:
            items = self.bridge.subscribe(run_id, last_event_id=request.get("last_event_id"), heartbeat=request.get("heartbeat"))
            async for item in items:
                writer.write(_line({"event": item.event, "data": item.data, "id": item.id}))
                await writer.drain()

        # The asker hanging up (its client left) must end the subscription even while the run
        # is quiet: wait for its end of the socket beside the stream.
        streaming = asyncio.ensure_future(forward())
        hung_up = asyncio.ensure_future(reader.read())
        try:
            await asyncio.wait((streaming, hung_up), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (streaming, hung_up):
                task.cancel()
            await asyncio.gather(streaming, hung_up, return_exceptions=True)


class RelayedStreamBridge:
    """The memory bridge, plus the runs a peer process holds (read through the peer)."""

    def __init__(self, local: MemoryStreamBridge, directory: Path, *, name: str | None = None):
        self.local = local
        self.directory = directory
        self.name = name or str(os.getpid())

    # Producing is always local: a run's events are published where it executes.
    def publish(self, run_id: str, event: str, data: Any) -> str:
        return self.local.publish(run_id, event, data)

    def end(self, run_id: str) -> str:
        return self.local.end(run_id)

    def publish_if_open(self, run_id: str, event: str, data: Any, *, ending: bool = False) -> str | None:
        return self.local.publish_if_open(run_id, event, data, ending=ending)

    def open(self, run_id: str) -> None:
        self.local.open(run_id)

    def produce_here(self, run_id: str) -> None:
        self.local.produce_here(run_id)

    async def apublish(self, run_id: str, event: str, data: Any) -> str:
        return self.local.publish(run_id, event, data)

    async def aend(self, run_id: str) -> str:
        return self.local.end(run_id)

    def has_run(self, run_id: str) -> bool:
        return self.local.has_run(run_id)

    def is_ended(self, run_id: str) -> bool:
        return self.local.is_ended(run_id)

    def relay(self, *, on_cancel: Callable[[str, str], bool] | None = None) -> StreamRelay:
        """This process's answering side, to run on a loop with ``serve_forever``."""
        return StreamRelay(self.local, self.directory, name=self.name, on_cancel=on_cancel)

    def peers(self) -> list[Path]:
        """The other processes' sockets (a blocking directory read: call it off the loop)."""
        try:
            return sorted(p for p in self.directory.glob("*.sock") if p.stem != self.name)
        except OSError:
            return []

    # -- consuming ---------------------------------------------------------------------

    async def subscribe(self, run_id: str, *, last_event_id: str | None = None, heartbeat: float | None = 15.0) -> AsyncIterator[StreamItem]:
        async for batch in self.subscribe_batches(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
            for item in batch:
                yield item

    async def subscribe_batches(self, run_id: str, *, last_event_id: str | None = None,
                                heartbeat: float | None = 15.0) -> AsyncIterator[list[StreamItem]]:
        """The local bridge's batches; a peer's items one by one, as its socket delivers them."""
        if not self.local.has_run(run_id):
            peer = await self._peer_holding(run_id, last_event_id, heartbeat)
            if peer is not None:
                async for item in _relayed(*peer):
                    yield [item]
                return
        async for batch in self.local.subscribe_batches(run_id, last_event_id=last_event_id, heartbeat=heartbeat):
            yield batch

    async def _peer_holding(self, run_id: str, last_event_id: str | None, heartbeat: float | None):
        request = _line({"op": "subscribe", "run_id": run_id, "last_event_id": last_event_id, "heartbeat": heartbeat})
        for path in await asyncio.to_thread(self.peers):
            writer = None
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path), limit=_MAX_LINE), ANSWER_TIMEOUT)
                writer.write(request)
                await writer.drain()
                answer = json.loads(await asyncio.wait_for(reader.readline(), ANSWER_TIMEOUT) or b"{}")
            except (OSError, ValueError, asyncio.TimeoutError):  # a socket a stopped process left behind
                if writer is not None:
                    writer.close()
                continue
            if answer.get("held"):
                return reader, writer
            writer.close()
        return None

    def cancel_elsewhere(self, run_id: str, action: str) -> bool:
        """Ask the peers to cancel a run one of them executes (blocking: from sync code)."""
        request = _line({"op": "cancel", "run_id": run_id, "action": action})
        for path in self.peers():
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(ANSWER_TIMEOUT)
                    sock.connect(str(path))
                    sock.sendall(request)
                    answer = json.loads(sock.makefile("rb").readline() or b"{}")
            except (OSError, ValueError):
                continue
            if answer.get("cancelled"):
                return True
        return False


async def _relayed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> AsyncIterator[StreamItem]:
    try:
        while True:
            try:
                line = await reader.readline()
                message = json.loads(line) if line else None
            except (OSError, ValueError):
                message = None
            if message is None:  # the peer stopped mid-stream
                yield StreamItem(END, None)
                return
            item = StreamItem(message["event"], message.get("data"), message.get("id"))
            yield item
            if item.event in (END, GAP):
                return
    finally:
        writer.close()
