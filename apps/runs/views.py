"""LangGraph-compatible run routes (thread runs and stateless runs).

Admission and cancellation are short synchronous calls. Anything that waits for a run
(streams, ``/wait``, ``/join``) answers with an async streaming body, so a waiting client
holds no worker thread.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

from channels.db import DatabaseSyncToAsync
from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import require_token_scope, token_lacks_scope
from apps.errors import InvalidRequest
from apps.runs import selectors, services
from apps.runs.api_types import RUN_EXAMPLE, RUN_REQUEST_EXAMPLE, Event, FinalValues, Run, RunMessagesPage
from apps.runs.runtime import get_runtime
from apps.runs.schemas import RunCreate, parse_run_request
from apps.runs.serializers import run_json
from apps.runs.sse import EventStreamRenderer, RunBody, check_last_event_id, run_events, sse_response
from apps.runs.state import thread_values
from apps.threads.selectors import thread_get_for_user
from deerflow_site.json_input import SafeJSONRenderer
from harness.observability import metrics
from harness.runtime.stream_bridge import END, GAP

logger = logging.getLogger(__name__)

RENDERERS = [SafeJSONRenderer, EventStreamRenderer]
# The stream's events are documented as schemas (deerflow_site/api_schema.py: StreamEvent).
STREAM = {"type": "string", "description": "server-sent events; see the StreamEvent schema"}


def _flag(value: str | None, name: str, default: bool = False) -> bool:
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise InvalidRequest(f"{name} must be true or false")


def _content_location(thread_id: str, run_id: str) -> str:
    return f"/api/threads/{thread_id}/runs/{run_id}"


def _final_values(run_id: str, thread, *, cancel_on_disconnect: bool) -> RunBody:
    """One JSON document once the run has ended: the thread's final values."""
    return RunBody(_values_when_done(run_id, thread), run_id, cancel_on_disconnect=cancel_on_disconnect)


async def _values_when_done(run_id: str, thread) -> AsyncIterator[bytes]:
    metrics.subscriber("wait", 1)
    try:
        async for item in get_runtime().bridge.subscribe(run_id, heartbeat=None):
            if item.event in (END, GAP):
                break
    finally:
        metrics.subscriber("wait", -1)
    try:
        values = await DatabaseSyncToAsync(thread_values, thread_sensitive=False)(thread=thread)
    except Exception:
        # An unreadable state must not leave the client waiting on a body that never comes
        # (the response has started): it gets the run's outcome without the values.
        logger.exception("Run %s ended but the state of thread %s could not be read", run_id, thread.pk)
        values = {}
    run = await DatabaseSyncToAsync(_run_error, thread_sensitive=False)(run_id)
    if run is not None:
        values = {**values, "__error__": run} if isinstance(values, dict) else values
    yield json.dumps(values, default=str).encode()


def _run_error(run_id: str) -> dict | None:
    from apps.runs.models import Run

    run = Run.objects.filter(pk=run_id).only("status", "error").first()
    if run is not None and run.status == Run.Status.ERROR:
        return {"error": "RunError", "message": run.error}
    return None


def _json_response(stream: RunBody, *, content_location: str | None = None) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="application/json")
    if content_location:
        response["Content-Location"] = content_location
    return response


class _JSONErrors:
    """A stream route's error is a JSON document, and says so: ``Content-Type: application/json``
    even when the client asked for ``text/event-stream`` (which only a stream can be)."""

    def finalize_response(self, request, response, *args, **kwargs):
        if isinstance(response, Response) and response.status_code >= 400:
            request.accepted_renderer, request.accepted_media_type = SafeJSONRenderer(), SafeJSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)


class _RunCreateMixin:
    stateless = False

    def admit(self, request, thread_id: str | None):
        run_request = parse_run_request(request.data if request.data is not None else {})
        admitted = services.start_run(user=request.user, thread_id=thread_id, request=run_request, stateless=self.stateless)
        return run_request, admitted


class ThreadRunsView(_RunCreateMixin, APIView):
    token_scopes = {"GET": "runs:read", "POST": "runs:create"}

    @extend_schema(responses=Run(many=True), operation_id="threads_runs_list")
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        params = request.query_params
        try:
            limit, offset = int(params.get("limit", 10)), int(params.get("offset", 0))
        except ValueError:
            raise InvalidRequest("limit and offset must be integers") from None
        runs = selectors.run_list(thread=thread, limit=limit, offset=offset, status=params.get("status"))
        return Response([run_json(r) for r in runs])

    @extend_schema(request=RunCreate, responses=Run, examples=[RUN_REQUEST_EXAMPLE, RUN_EXAMPLE])
    def post(self, request, thread_id=None):
        _, admitted = self.admit(request, thread_id)
        response = Response(run_json(admitted.run))
        response["Content-Location"] = _content_location(admitted.thread.pk, str(admitted.run.pk))
        return response


class ThreadRunsStreamView(_JSONErrors, _RunCreateMixin, APIView):
    token_scopes = {"POST": "runs:create"}
    renderer_classes = RENDERERS

    @extend_schema(request=RunCreate, responses={(200, "text/event-stream"): STREAM}, examples=[RUN_REQUEST_EXAMPLE])
    def post(self, request, thread_id=None):
        run_request, admitted = self.admit(request, thread_id)
        run_id = str(admitted.run.pk)
        stream = run_events(run_id, last_event_id=None, cancel_on_disconnect=run_request.on_disconnect == "cancel")
        return sse_response(stream, content_location=_content_location(admitted.thread.pk, run_id))


class ThreadRunsWaitView(_RunCreateMixin, APIView):
    token_scopes = {"POST": "runs:create"}

    @extend_schema(request=RunCreate, responses=FinalValues, examples=[RUN_REQUEST_EXAMPLE])
    def post(self, request, thread_id=None):
        run_request, admitted = self.admit(request, thread_id)
        run_id = str(admitted.run.pk)
        body = _final_values(run_id, admitted.thread, cancel_on_disconnect=run_request.on_disconnect == "cancel")
        return _json_response(body, content_location=_content_location(admitted.thread.pk, run_id))


class StatelessRunsView(ThreadRunsView):
    stateless = True
    token_scopes = {"POST": "runs:create"}
    http_method_names = ["post", "options"]


class StatelessRunsStreamView(ThreadRunsStreamView):
    stateless = True


class StatelessRunsWaitView(ThreadRunsWaitView):
    stateless = True


class RunDetailView(APIView):
    token_scopes = {"GET": "runs:read", "DELETE": "runs:cancel"}

    @extend_schema(responses=Run)
    def get(self, request, thread_id, run_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(run_json(selectors.run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id)))

    @extend_schema(responses={204: None})
    def delete(self, request, thread_id, run_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        services.run_delete(run=selectors.run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RunCancelView(APIView):
    token_scopes = {"POST": "runs:cancel"}

    @extend_schema(request=None, responses={202: None, 204: None})
    def post(self, request, thread_id, run_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        run = selectors.run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id)
        wait = _flag(request.query_params.get("wait"), "wait")
        services.run_cancel(run=run, action=request.query_params.get("action") or "interrupt", wait=wait)
        return Response(status=status.HTTP_204_NO_CONTENT if wait else status.HTTP_202_ACCEPTED)


CANCEL_SCOPE = "runs:cancel"
GET_ACTION_REFUSED = ("action is only accepted on POST: a GET never changes anything; "
                      "cancel with POST …/runs/{run_id}/cancel?action=… (or POST this stream with ?action=…)")


def _cancel_on_disconnect(request, *, default: bool) -> bool:
    """Whether the run is cancelled when this client goes away. Asking for that is asking to
    cancel, so a token needs ``runs:cancel`` for it; the run's own ``on_disconnect`` (the
    default) applies only to callers who may cancel: a read-only token's stream just ends."""
    value = request.query_params.get("cancel_on_disconnect")
    if value in (None, ""):
        return default and not token_lacks_scope(request, CANCEL_SCOPE)
    wanted = _flag(value, "cancel_on_disconnect")
    if wanted:
        require_token_scope(request, CANCEL_SCOPE)
    return wanted


class RunJoinView(APIView):
    token_scopes = {"GET": "runs:read"}

    @extend_schema(responses=FinalValues)
    def get(self, request, thread_id, run_id):
        cancel = _cancel_on_disconnect(request, default=False)
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        run = selectors.run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id)
        return _json_response(_final_values(str(run.pk), thread, cancel_on_disconnect=cancel))


class RunJoinStreamView(_JSONErrors, APIView):
    """(Re)attach to a run's stream: a read, by GET (the langgraph-sdk's ``join_stream``) or
    POST. ``?action=`` cancels the run first: on POST only, and a token needs ``runs:cancel``
    for it as well; a GET with ``action`` is a 422 and changes nothing."""

    token_scopes = {"GET": "runs:read", "POST": "runs:read"}
    renderer_classes = RENDERERS

    def _stream(self, request, thread_id, run_id, *, action: str | None):
        last_event_id = request.headers.get("Last-Event-ID") or None
        check_last_event_id(last_event_id)  # before a cancel: a refused request changes nothing
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        run = selectors.run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id)
        default_cancel = (run.kwargs or {}).get("on_disconnect", "cancel") == "cancel"
        cancel = _cancel_on_disconnect(request, default=default_cancel)
        if action:
            services.run_cancel(run=run, action=action, wait=_flag(request.query_params.get("wait"), "wait"))
        return sse_response(run_events(str(run.pk), last_event_id=last_event_id, cancel_on_disconnect=cancel))

    @extend_schema(responses={(200, "text/event-stream"): STREAM}, operation_id="threads_runs_join_stream")
    def get(self, request, thread_id, run_id):
        if request.query_params.get("action"):
            raise InvalidRequest(GET_ACTION_REFUSED)
        return self._stream(request, thread_id, run_id, action=None)

    @extend_schema(request=None, responses={(200, "text/event-stream"): STREAM}, operation_id="threads_runs_join_stream_create")
    def post(self, request, thread_id, run_id):
        action = request.query_params.get("action")
        if action:
            require_token_scope(request, CANCEL_SCOPE)
        return self._stream(request, thread_id, run_id, action=action)


def _int_param(value: str | None, name: str, default: int | None) -> int | None:
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidRequest(f"{name} must be an integer") from None


class RunEventsView(APIView):
    """The run's journal (API_CONTRACT §5), e.g. one subagent's steps:
    ``?event_types=subagent.step&task_id=…``; page with ``after_seq``."""

    token_scopes = {"GET": "runs:read"}

    @extend_schema(responses=Event(many=True))
    def get(self, request, thread_id, run_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        run = selectors.run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id)
        params = request.query_params
        types = [t.strip() for t in (params.get("event_types") or "").split(",") if t.strip()] or None
        return Response(selectors.run_events_page(run=run, event_types=types, task_id=params.get("task_id") or None,
                                                  limit=_int_param(params.get("limit"), "limit", 500),
                                                  after_seq=_int_param(params.get("after_seq"), "after_seq", None)))


class RunMessagesView(APIView):
    """One run's messages, paged forwards: ``?limit=50&after_seq=…`` → ``{data, has_more, next_after_seq}``."""

    token_scopes = {"GET": "runs:read"}

    @extend_schema(responses=RunMessagesPage)
    def get(self, request, thread_id, run_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        run = selectors.run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id)
        params = request.query_params
        return Response(selectors.run_messages_page(run=run, limit=_int_param(params.get("limit"), "limit", 50),
                                                    after_seq=_int_param(params.get("after_seq"), "after_seq", None)))
