"""Websocket at ``/ws/threads/{thread_id}/``: follow the thread's runs, start one, cancel.

Messages are JSON objects with a ``type``:

- client ``{"type": "subscribe", "run_id"?: str, "after"?: event id}`` — follow the given run,
  or the thread's active one; events already sent (up to ``after``) are not repeated.
- client ``{"type": "run", "payload": <run request>}`` — start a run (same validation as
  ``POST /runs``) and follow it; answered with ``{"type": "run_created", "run": …}``. With
  ``"thread": {"metadata"?: {…}}`` as well, the thread is created with that metadata if it does
  not exist yet, in one transaction with the run (a new chat's first message).
- client ``{"type": "cancel", "run_id"?: str, "action"?: "interrupt"|"rollback"}``.
- server ``{"type": "event", "run_id", "id", "event", "data"}`` for each stream event (``end``
  included), ``{"type": "idle"}`` when there is no active run to follow, and
  ``{"type": "error", "status", "detail"}`` when a request is refused.

The session authenticates the socket: without one the socket is accepted and closed with 4401,
and a thread that is not the user's closes it with 4404 — unless the socket was opened with
``?new=1``: the chat page opens it for the thread id it made up, before the first message
creates that thread, so the socket is ready when the user presses Enter. Such a socket is
accepted whether the id is free or another user's (the two must look the same); the first
``run`` with ``thread`` then creates it, or answers 404 for another user's id.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from apps.errors import DomainError, InvalidRequest, NotFound
from apps.runs.models import Run
from apps.runs.follow import follow_run
from apps.runs.schemas import parse_run_request
from apps.runs.serializers import run_json
from apps.runs.services import run_cancel, start_run, start_run_in_new_thread
from apps.threads.selectors import thread_get_for_user
from apps.threads.services import validate_thread_id
from deerflow_site.errors import http_status
from deerflow_site.json_input import load_json
from harness.observability import metrics
from harness.observability.context import request_id_from_headers, request_id_var, trace_from_headers, trace_id_var, traceparent_var
from harness.runtime.stream_bridge import HEARTBEAT

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


class ThreadConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.user = self.scope.get("user")
        self.thread_id = self.scope["url_route"]["kwargs"]["thread_id"]
        self.follow_task: asyncio.Task | None = None
        # The handshake's X-Request-ID / traceparent, when sent, names every run this socket
        # starts; otherwise each run gets an id of its own.
        headers = dict(self.scope.get("headers") or [])
        sent_id, traceparent = headers.get(b"x-request-id"), headers.get(b"traceparent")
        self.request_id = (request_id_from_headers(sent_id.decode("latin-1") if sent_id else None,
                                                   traceparent.decode("latin-1") if traceparent else None)
                           if sent_id or traceparent else None)
        # Likewise its X-Trace-Id / traceparent name the trace of every run it starts.
        sent_trace = headers.get(b"x-trace-id")
        self.trace = (trace_from_headers(sent_trace.decode("latin-1") if sent_trace else None,
                                         traceparent.decode("latin-1") if traceparent else None)
                      if sent_trace or traceparent else (None, None))
        if self.user is None or not self.user.is_authenticated:
            await self._refuse(CLOSE_UNAUTHENTICATED)
            return
        try:
            await database_sync_to_async(thread_get_for_user)(user=self.user, thread_id=self.thread_id)
        except NotFound:
            if not (_opened_for_new_thread(self.scope) and _valid_thread_id(self.thread_id)):
                await self._refuse(CLOSE_NOT_FOUND)
                return
        await self.accept()

    async def _refuse(self, code: int) -> None:
        # Accepted first: a close before the handshake completes reaches the client as a plain
        # HTTP 403 (Daphne), and the code would be lost.
        await self.accept()
        await self.close(code=code)

    async def disconnect(self, code: int) -> None:
        if self.follow_task is not None:
            self.follow_task.cancel()

    async def receive(self, text_data=None, bytes_data=None, **kwargs) -> None:
        # The same door as the HTTP API: lone surrogates and deep nesting are refused here.
        try:
            content = load_json(text_data if text_data is not None else bytes_data)
        except DomainError as exc:
            await self.send_json({"type": "error", "status": http_status(exc), "detail": exc.detail})
            return
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content, **kwargs) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        try:
            if kind == "subscribe":
                await self._subscribe(content.get("run_id"), content.get("after"))
            elif kind == "run":
                run = await database_sync_to_async(self._start)(content.get("payload") or {}, _new_thread(content))
                await self.send_json({"type": "run_created", "run": run})
                await self._subscribe(run["run_id"], None)
            elif kind == "cancel":
                await database_sync_to_async(self._cancel)(content.get("run_id"), content.get("action") or "interrupt")
            else:
                await self.send_json({"type": "error", "status": 400, "detail": "type must be subscribe, run or cancel"})
        except DomainError as exc:
            await self.send_json({"type": "error", "status": http_status(exc), "detail": exc.detail})

    # -- actions ------------------------------------------------------------------------

    def _start(self, payload: dict, new_thread: dict | None) -> dict:
        tokens = (request_id_var.set(self.request_id), trace_id_var.set(self.trace[0]), traceparent_var.set(self.trace[1]))
        try:
            request = parse_run_request(payload)
            if new_thread is None:
                admitted = start_run(user=self.user, thread_id=self.thread_id, request=request)
            else:
                admitted = start_run_in_new_thread(user=self.user, thread_id=self.thread_id, request=request,
                                                   metadata=new_thread.get("metadata"))
        finally:
            for var, token in zip((request_id_var, trace_id_var, traceparent_var), tokens, strict=True):
                var.reset(token)
        return run_json(admitted.run)

    def _active_or_given(self, run_id: str | None) -> Run | None:
        qs = Run.objects.filter(thread_id=self.thread_id, owner_id=self.user.pk)
        if run_id:
            run = qs.filter(pk=run_id).first() if _is_uuid(run_id) else None
            if run is None:
                raise NotFound(f"Run {run_id} not found")
            return run
        return qs.filter(status__in=Run.ACTIVE_STATUSES).first()

    def _cancel(self, run_id: str | None, action: str) -> None:
        run = self._active_or_given(run_id)
        if run is None:
            raise NotFound(f"Thread {self.thread_id} has no active run")
        run_cancel(run=run, action=action)

    async def _subscribe(self, run_id: str | None, after: str | None) -> None:
        run = await database_sync_to_async(self._active_or_given)(run_id)
        if run is None:
            await self.send_json({"type": "idle"})
            return
        if self.follow_task is not None:
            self.follow_task.cancel()
        self.follow_task = asyncio.create_task(self._follow(str(run.pk), after))

    async def _follow(self, run_id: str, after: str | None) -> None:
        metrics.subscriber("websocket", 1)
        try:
            async for batch in follow_run(run_id, after, heartbeat=15.0):
                for item in batch:
                    if item.event == HEARTBEAT:
                        continue
                    await self.send_json({"type": "event", "run_id": run_id, "id": item.id, "event": item.event, "data": item.data})
        finally:
            metrics.subscriber("websocket", -1)


def _opened_for_new_thread(scope) -> bool:
    return parse_qs((scope.get("query_string") or b"").decode("latin-1")).get("new") == ["1"]


def _valid_thread_id(thread_id: str) -> bool:
    try:
        validate_thread_id(thread_id)
    except InvalidRequest:
        return False
    return True


def _new_thread(content: dict) -> dict | None:
    """The ``thread`` of a ``run`` message: what the thread is created with, checked before anything is written."""
    if "thread" not in content:
        return None
    thread = content["thread"]
    if not isinstance(thread, dict):
        raise InvalidRequest("thread: must be an object, e.g. {\"metadata\": {}}")
    unknown = sorted(set(thread) - {"metadata"})
    if unknown:
        raise InvalidRequest(f"thread: unknown key {unknown[0]!r} (only metadata is taken)")
    if thread.get("metadata") is not None and not isinstance(thread["metadata"], dict):
        raise InvalidRequest("thread.metadata: must be an object")
    return thread


def _is_uuid(value: str) -> bool:
    import uuid

    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
