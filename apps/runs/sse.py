"""Server-sent events exactly as LangGraph Platform frames them.

``event: <name>`` / ``data: <json>`` / ``id: <id>`` / blank line; ``: heartbeat`` comments
keep idle connections open; ``end`` carries ``data: null``. A client that goes away makes
the run cancel when its ``on_disconnect`` says so.
"""

from __future__ import annotations

import json
import logging
import time

import orjson
from collections.abc import AsyncIterator
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from apps.errors import InvalidRequest
from apps.runs.follow import follow_run
from apps.runs.runtime import get_runtime
from apps.runs.shutdown import draining
from harness.observability import metrics
from harness.runtime.stream_bridge import END, GAP, HEARTBEAT, StreamItem
from harness.runtime.stream_compaction import id_key

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15.0


class EventStreamRenderer(BaseRenderer):
    """Lets DRF accept ``Accept: text/event-stream``; errors on stream routes are JSON (``views._JSONErrors``)."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return json.dumps(data, default=str).encode()


_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS


def _json(data: Any) -> bytes:
    """Compact UTF-8 JSON. orjson is a tenth of the stdlib's cost per event; what it refuses
    (an integer past 64 bits) goes through the stdlib, with the same output otherwise."""
    try:
        return orjson.dumps(data, default=str, option=_ORJSON_OPTIONS)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(data, default=str, ensure_ascii=False, separators=(",", ":")).encode()


def frame(item: StreamItem) -> bytes:
    if item.event == HEARTBEAT:
        return b": heartbeat\n\n"
    head = b"event: " + item.event.encode() + b"\ndata: " + _json(item.data)
    if item.id is not None and item.event != GAP:
        return head + b"\nid: " + item.id.encode() + b"\n\n"
    return head + b"\n\n"


class RunBody:
    """A streamed response body for one run that cancels the run when the client leaves early.

    Django closes a response when its client disconnects, and calls the body's ``close()``
    then (in a worker thread). That is the dependable place: a ``finally`` in the body's own
    generator runs only when the generator is finalized, which, when the disconnect lands
    while Django is writing a chunk, may be long after the run has finished.
    """

    def __init__(self, body: AsyncIterator[bytes], run_id: str, *, cancel_on_disconnect: bool):
        self.body = body
        self.run_id = run_id
        self.cancel_on_disconnect = cancel_on_disconnect
        self.finished = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        _open_bodies.add(self)
        try:
            async for chunk in self.body:
                yield chunk
            self.finished = True
        finally:
            _open_bodies.discard(self)

    def close(self) -> None:
        _open_bodies.discard(self)
        # A server shutting down closes its streams itself: that is no client leaving.
        if not self.finished and self.cancel_on_disconnect and not draining():
            try:
                _cancel_after_disconnect(self.run_id)
            except Exception:  # Django would swallow it silently: say why the run goes on
                logger.exception("Run %s: could not cancel it after its client disconnected", self.run_id)


# The run streams this process is sending: a stopping server lets those whose run has ended
# deliver their last events before it closes the rest (deerflow_site/server/daphne_server.py).
_open_bodies: set[RunBody] = set()


def wait_for_ended_streams(timeout: float) -> None:
    """Blocking (a run's end may be asked of Redis): until every open stream whose run has
    ended has sent its end, or ``timeout`` passes. The streams of runs still going are left."""
    bridge = get_runtime().bridge
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(bridge.is_ended(body.run_id) for body in list(_open_bodies)):
            return
        time.sleep(0.05)


def check_last_event_id(last_event_id: str | None) -> None:
    """Refuse a ``Last-Event-ID`` that is not an event id at all, before anything happens. One
    that has the shape but was never issued for this run is only known to the bridge, which
    answers it with a ``gap`` saying so."""
    if last_event_id is not None and id_key(last_event_id) is None:
        raise InvalidRequest(f"Last-Event-ID {last_event_id[:64]!r} is not an event id (<ms>-<n>) of this stream")


def run_events(run_id: str, *, last_event_id: str | None, cancel_on_disconnect: bool) -> RunBody:
    check_last_event_id(last_event_id)
    return RunBody(_frames(run_id, last_event_id), run_id, cancel_on_disconnect=cancel_on_disconnect)


async def _frames(run_id: str, last_event_id: str | None) -> AsyncIterator[bytes]:
    metrics.subscriber("sse", 1)
    try:
        # The events that are there together go out as one chunk: each chunk is a trip through
        # Django's and Daphne's send path and a write of Twisted's, and a run's events mostly
        # arrive several at a time. The bytes on the wire are the same.
        async for batch in follow_run(run_id, last_event_id, heartbeat=HEARTBEAT_SECONDS):
            yield b"".join(frame(item) for item in batch)
            if batch[-1].event in (END, GAP):
                return
    finally:
        metrics.subscriber("sse", -1)


def _cancel_after_disconnect(run_id: str) -> None:
    from apps.runs.models import Run
    from apps.runs.services import run_cancel
    from apps.errors import Conflict

    run = Run.objects.filter(pk=run_id).first()
    if run is None or not run.is_active:
        return
    try:
        run_cancel(run=run, action="interrupt")
        logger.info("Run %s cancelled: its stream client disconnected (on_disconnect=cancel)", run_id)
    except Conflict:
        pass


def sse_response(stream: RunBody, *, content_location: str | None = None) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="text/event-stream; charset=utf-8")
    # Read on the server's loop to the end: the request's thread is free for other requests
    # while the stream is held (deerflow_site/server/handlers.py).
    response.needs_no_request_thread = True
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    if content_location:
        response["Content-Location"] = content_location
    return response
