"""The server: Daphne, with request bodies bounded as they arrive and streamed to the app.

``python -m deerflow_site.server.daphne_server`` takes Daphne's command line (``-b``, ``-p``, the
application path) and runs Daphne with three changes to how it handles an HTTP request body.
Daphne 4.2 on Twisted, left alone:

1. Twisted writes the body to a temp file (past 100 kB) and only then hands the request to
   Daphne — with no limit, so any client can fill the disk;
2. Twisted parses a ``multipart/form-data`` POST itself (``Request.requestReceived``) by
   reading the whole body into memory, for ``request.args`` that Daphne never uses;
3. Daphne then reads the whole file onto the application's receive queue at once
   (``WebRequest.process``), so the body is in memory again, chunk by chunk, whatever the
   application reads.

A 99 MiB upload grew the process by 1.2 GiB; a 200 MiB anonymous POST by 200 MiB. Here:

1. ``BoundedRequest`` decides the request's limit from its headers (deerflow_site.server.body_limits)
   as soon as they are in: a declared length past it, or a chunked body that counts past it,
   is answered with 413 at once and the rest of the body is read and dropped, never stored.
   A body that may pass the anonymous limit is held back until the credentials it presents
   are checked; forged ones get the anonymous limit;
2. Twisted's own form parsing is switched off (``_parsePOSTFormSubmission``);
3. the application's receive queue (``_PulledBody``) reads the next chunk from the temp file
   only when the application asks for it.

Started by deerflow_site.server.web_processes (several servers on one socket), the server also tells
the launcher when it listens, and takes one connection per wake-up (``_SharedPort``).

On SIGTERM (or SIGINT), before Daphne cancels what is still going, the server drains
(``BoundedServer.kill_all_applications``): it admits no new run (503 with ``Retry-After``) and
says it is not ready, gives the runs it executes ``SHUTDOWN_GRACE_SECONDS`` to finish, hands
the rest to recovery (apps/runs/shutdown.py), and closes the streams it still holds with a
reconnect hint: an SSE stream ends with ``retry:`` and a comment saying to reconnect with
``Last-Event-ID``, a websocket closes with 1012 (service restart). The port answers until then.

Once Daphne has stopped and serves nothing more, ``_after_stop`` hands on
what the process still holds for later: the memory updates its runs queued are applied, within
a bound, or saved for the next start (apps/memory/updates.py, docs/memory.md).

Everything else — websockets, timeouts, the access log — is Daphne's. The memory bounds are
asserted against this server by tests/site/test_body_limits_live.py, so a Daphne upgrade that
changes these internals fails there.
"""

from __future__ import annotations

import asyncio
import io
import contextlib
import logging
import os
from functools import partial

# Daphne makes its loop (Twisted's reactor runs on it) when daphne.server is first imported:
# under uvloop's policy for that import only, it is uvloop's, as the runs loop is. Waking a
# standard loop from another thread (every event a run streams) writes to its self-pipe with
# the GIL released, and the writer then waits for the GIL again; uvloop's wake-up does not let
# go of it. Twisted's asyncio reactor uses only the public loop API (its one private access is
# guarded). The policy goes back at once, so no other loop of the process changes kind.
try:
    import uvloop
except ImportError:  # no build for this platform (Windows): the standard loop does the same
    uvloop = None
if uvloop is not None:
    _policy = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    try:
        import daphne.server  # noqa: F401
    finally:
        asyncio.set_event_loop_policy(_policy)

from daphne.cli import CommandLineInterface
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server
from daphne.ws_protocol import WebSocketProtocol
from twisted.internet import tcp
from twisted.web import http
from twisted.internet.threads import deferToThread

# Chunks handed to the application: large enough that a 100 MiB body is ~1,600 reads.
BODY_CHUNK = 64 * 1024
# A refused body is read and dropped so that the client can read the 413 (a server that closes
# on unread data makes the kernel reset the connection, answer included); past this much the
# connection is closed anyway.
DISCARD_MAX = 256 * 1024 * 1024
# The last bytes of an SSE stream a stopping server closes: EventSource reconnects after
# ``retry`` ms; any client that resumes with Last-Event-ID reaches another server.
RECONNECT_HINT = b": this server is shutting down; reconnect with Last-Event-ID to resume\nretry: 1000\n\n"
# A websocket's close code for the same: 1012 is "service restart", reconnect.
CLOSE_RESTARTING = 1012
# How long the streams of runs that have ended get to send their last events at shutdown.
STREAM_END_SECONDS = 5

logger = logging.getLogger(__name__)


class _Drained:
    """Stands where Daphne looks for the body file: Daphne reads nothing from it (so it queues
    no body), and ``_PulledBody`` reads the real file on demand."""

    def __init__(self, file):
        self.file = file

    @property
    def closed(self) -> bool:
        return self.file.closed

    def read(self, *args) -> bytes:
        return b""

    def seek(self, *args) -> int:
        return 0

    def close(self) -> None:
        self.file.close()


class _PulledBody(asyncio.Queue):
    """The application's receive queue, serving the body from the request's file as it asks."""

    def __init__(self, body_file):
        super().__init__()
        self._file = body_file
        self._more = True

    def put_nowait(self, item):
        if item.get("type") == "http.request":
            return  # Daphne's own (empty) body message: the body comes from get() below
        super().put_nowait(item)

    def _read(self) -> bytes:
        return self._file.read(BODY_CHUNK)

    async def get(self):
        if self._more and self.empty():
            try:
                # Twisted keeps a body under 100 kB in memory: reading it needs no thread.
                chunk = self._read() if isinstance(self._file, io.BytesIO) else await asyncio.to_thread(self._read)
            except (ValueError, OSError):  # the file is closed: the client went away
                self._more = False
                return {"type": "http.disconnect"}
            self._more = len(chunk) == BODY_CHUNK
            return {"type": "http.request", "body": chunk, "more_body": self._more}
        return await super().get()


class BoundedRequest(WebRequest):
    _refused = False
    _received = 0
    _declared: int | None = None
    # While the credentials are checked: no more of the body is read, and the app not started.
    _checking = False
    _process_when_checked = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._parsePOSTFormSubmission = False

    def gotLength(self, length):
        from deerflow_site.server.body_limits import anonymous_limit, body_limit

        headers = [(name, value) for name, values in self.requestHeaders.getAllRawHeaders() for value in values]
        self._limit = body_limit(headers)
        self._declared = length
        if length is not None and length > self._limit.max_bytes:
            self._refuse()
            return
        super().gotLength(length)
        anonymous = anonymous_limit()
        if self._limit.max_bytes > anonymous.max_bytes and (length is None or length > anonymous.max_bytes):
            self._check_credentials(headers, anonymous)

    def _check_credentials(self, headers, anonymous) -> None:
        """More than the anonymous limit is accepted only once the credentials are known to be
        real (a database lookup, on Twisted's thread pool); the body waits in the socket."""
        from deerflow_site.server.body_limits import credentials_valid

        self._checking = True
        self.channel._networkProducer.pauseProducing()
        deferToThread(credentials_valid, headers).addBoth(self._credentials_checked, anonymous)

    def _credentials_checked(self, valid, anonymous) -> None:
        self._checking = False
        if getattr(self, "_disconnected", False) or self.channel is None:
            return
        if valid is not True:
            if valid is not False:  # a Failure: the lookup itself failed (the database, say)
                logger.warning("credentials check for a large request body failed: %s", valid.getErrorMessage())
            self._limit = anonymous
            if max(self._declared or 0, self._received) > anonymous.max_bytes and not self._refused:
                self._refuse()
        channel = self.channel
        if not channel._handlingRequest and not channel._waitingForTransport:
            channel._networkProducer.resumeProducing()
        if self._process_when_checked:
            self._process_when_checked = False
            self.process()

    def handleContentChunk(self, data):
        self._received += len(data)
        if self._refused:
            if self._received > DISCARD_MAX:
                self.channel.transport.loseConnection()
            return
        if self._received > self._limit.max_bytes:
            self._refuse()
            return
        super().handleContentChunk(data)

    def _refuse(self) -> None:
        from deerflow_site.server.body_limits import too_large_body

        self._refused = True
        if getattr(self, "content", None) is not None:
            self.content.close()  # a temp file: gone from the disk with its handle
        self.content = io.BytesIO()
        # Twisted would send "100 Continue" after our final answer.
        self.requestHeaders.removeHeader(b"expect")
        body = too_large_body(self._limit.detail)
        self.channel.transport.write(
            b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )

    def process(self):
        if self._checking:
            self._process_when_checked = True
            return None
        if self._refused:
            self.channel.transport.loseConnection()
            return None
        self.content = _Drained(self.content)
        return super().process()


class _Factory(HTTPFactory):
    def buildProtocol(self, addr):
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = BoundedRequest
        return protocol


class _SharedPort(tcp.Port):
    """A listening socket shared with other servers: one ``accept`` per wake-up.

    Twisted accepts up to 100 queued connections (more as traffic grows) each time the socket
    is readable, so the first server to wake would take a whole burst while the others sleep.
    Taking one, then going back to the loop, lets a server busy running Python leave the next
    connection to one that is idle.
    """

    @property
    def numberAccepts(self) -> int:
        return 1

    @numberAccepts.setter
    def numberAccepts(self, value: int) -> None:
        pass  # Twisted re-tunes it after every wake-up; a shared port keeps to one


def _report_ready(fd: int) -> None:
    with contextlib.suppress(OSError):  # the launcher is gone: it will not wait for us
        os.write(fd, b"!")
    with contextlib.suppress(OSError):
        os.close(fd)


class BoundedServer(Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from deerflow_site.server.web_processes import READY_FD_ENV

        # Popped so that the processes this server starts (sandbox commands) do not see it.
        ready_fd = os.environ.pop(READY_FD_ENV, None)
        self._shared_socket = ready_fd is not None
        if ready_fd is not None and self.ready_callable is None:
            self.ready_callable = partial(_report_ready, int(ready_fd))

    def run(self):
        try:
            super().run()
        finally:
            _after_stop()

    def listen_success(self, port):
        if self._shared_socket and type(port) is tcp.Port:
            port.__class__ = _SharedPort
        super().listen_success(port)

    def kill_all_applications(self):
        """Daphne's shutdown trigger, after the drain: no run admitted from here on, the
        running ones finished or handed to recovery, the open streams closed with a hint."""
        _drain_begin()
        drained = deferToThread(_drain_runs)
        drained.addBoth(self._close_streams)
        drained.addBoth(lambda _: super(BoundedServer, self).kill_all_applications())
        return drained

    def _close_streams(self, _result=None) -> None:
        closed = 0
        for protocol in list(self.connections):
            try:
                closed += _close_with_hint(protocol)
            except Exception:  # one connection's failure must not leave the others without their hint
                logger.exception("Could not close a stream with a reconnect hint")
        if closed:
            logger.warning("Shutting down: closed %d open stream(s) with a reconnect hint", closed)

    # Daphne's run() builds its HTTPFactory itself; this swaps in ours as it is assigned.
    @property
    def http_factory(self):
        return self._http_factory

    @http_factory.setter
    def http_factory(self, factory):
        self._http_factory = _Factory(self)

    def create_application(self, protocol, scope):
        """Daphne's, with a ``_PulledBody`` as the receive queue of plain HTTP requests."""
        assert "application_instance" not in self.connections[protocol]
        body = getattr(protocol, "content", None)
        input_queue = _PulledBody(body.file) if scope["type"] == "http" and isinstance(body, _Drained) else asyncio.Queue()
        scope.setdefault("asgi", {"version": "3.0"})
        application_instance = self.application(scope=scope, receive=input_queue.get, send=partial(self.handle_reply, protocol))
        if protocol not in self.connections:
            return None
        self.connections[protocol]["application_instance"] = asyncio.ensure_future(application_instance, loop=asyncio.get_event_loop())
        return input_queue


def _close_with_hint(protocol) -> int:
    if isinstance(protocol, WebSocketProtocol):
        if protocol.state != protocol.STATE_OPEN:
            return 0
        # autobahn's sendClose takes only 1000 and 3000–4999 from an application; 1012 is the
        # registered code a server sends when it restarts, so the frame is sent one level down.
        protocol.sendCloseFrame(code=CLOSE_RESTARTING, reasonUtf8=b"server restarting: reconnect", isReply=False)
        return 1
    if isinstance(protocol, WebRequest) and getattr(protocol, "_response_started", False) and not protocol.finished:
        content_type = b"".join(protocol.responseHeaders.getRawHeaders(b"content-type") or [])
        if content_type.startswith(b"text/event-stream"):
            http.Request.write(protocol, RECONNECT_HINT)
            protocol.finish()
            return 1
    return 0


# Imported when called: this module is loaded before Django is set up.
def _drain_begin() -> None:
    from apps.runs.shutdown import drain_begin

    drain_begin()


def _drain_runs() -> None:
    from apps.runs.runtime import get_runtime
    from apps.runs.shutdown import drain
    from apps.runs.sse import wait_for_ended_streams

    try:
        drain(get_runtime())
        # The runs just finished or recovered have published their end: their streams send it
        # before the others are closed with the hint.
        wait_for_ended_streams(STREAM_END_SECONDS)
    except Exception:  # the process stops regardless; its runs' leases lapse and another sweep settles them
        logger.exception("Could not hand this server's runs over at shutdown")


def _after_stop() -> None:
    """What a stopped server does before its process exits: no request reaches it any more."""
    from apps.memory.updates import stop_updates

    try:
        stop_updates()
    except Exception:  # the process exits regardless; say what went wrong
        logger.exception("Could not apply or save the pending memory updates")


class BoundedCommandLine(CommandLineInterface):
    server_class = BoundedServer


if __name__ == "__main__":
    BoundedCommandLine.entrypoint()
