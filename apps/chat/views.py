"""LangGraph-compatible thread routes: create, search, get, patch, delete, state, history,
plus the message page and token usage. Views parse, call a service, serialize."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.errors import InvalidRequest
from apps.runs import state
from apps.runs.search import thread_text_matches
from apps.runs.selectors import messages_page, thread_token_usage
from apps.runs import api_types as run_types
from apps.threads import serializers, services
from apps.threads.api_types import (THREAD_EXAMPLE, Thread, ThreadCreate, ThreadPatch, ThreadSearch,
                                    validated)
from apps.threads.feedback import attach_feedback
from apps.threads.selectors import thread_get_for_user, thread_search


def _int(value, name: str, default: int | None = None) -> int | None:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidRequest(f"{name} must be an integer") from None


def _body(request) -> dict:
    data = request.data
    if data is None or data == {}:
        return {}
    if not isinstance(data, dict):
        raise InvalidRequest("the request body must be a JSON object")
    return data


class ThreadCollectionView(APIView):
    token_scopes = {"POST": "threads:write"}

    @extend_schema(request=ThreadCreate, responses=Thread, examples=[THREAD_EXAMPLE])
    def post(self, request):
        body = validated(ThreadCreate, _body(request))
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise InvalidRequest("metadata must be an object")
        if body.get("graph_id") and "graph_id" not in metadata:
            metadata = {**metadata, "graph_id": body["graph_id"]}
        thread = services.thread_create(owner=request.user, thread_id=body.get("thread_id"),
                                        assistant_id=body.get("assistant_id") or metadata.get("graph_id") or "", metadata=metadata)
        return Response(serializers.thread_json(thread), status=status.HTTP_200_OK)


class ThreadSearchView(APIView):
    token_scopes = {"POST": "threads:read"}

    @extend_schema(request=ThreadSearch, responses=Thread(many=True))
    def post(self, request):
        body = validated(ThreadSearch, _body(request))
        threads = thread_search(
            user=request.user, metadata=body.get("metadata"), status=body.get("status"), ids=body.get("ids"),
            limit=_int(body.get("limit"), "limit", 10), offset=_int(body.get("offset"), "offset", 0),
            sort_by=body.get("sort_by"), sort_order=body.get("sort_order"),
            query=body.get("query"), pinned=body.get("pinned"), started=body.get("started"), tags=body.get("tags"),
            message_search=thread_text_matches,
        )
        return Response([serializers.thread_json(t, values={"title": t.title} if t.title else {}, snippet=t.search_snippet, listed=True)
                         for t in threads])


class ThreadDetailView(APIView):
    token_scopes = {"GET": "threads:read", "PATCH": "threads:write", "DELETE": "threads:write"}

    @extend_schema(responses=Thread, examples=[THREAD_EXAMPLE])
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(serializers.thread_json(thread, values=state.thread_values(thread=thread)))

    @extend_schema(request=ThreadPatch, responses=Thread)
    def patch(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        thread = services.thread_update(thread=thread, metadata=validated(ThreadPatch, _body(request)).get("metadata"))
        return Response(serializers.thread_json(thread))

    @extend_schema(responses={204: None})
    def delete(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        services.thread_delete(thread=thread)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ThreadPinView(APIView):
    """``PUT /threads/{id}/pin`` pins the thread (the sidebar lists it first), ``DELETE`` unpins."""

    token_scopes = {"PUT": "threads:write", "DELETE": "threads:write"}

    @extend_schema(request=None, responses=Thread)
    def put(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(serializers.thread_json(services.thread_set_pinned(thread=thread, pinned=True)))

    @extend_schema(request=None, responses={200: Thread})
    def delete(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(serializers.thread_json(services.thread_set_pinned(thread=thread, pinned=False)))


class ThreadStateView(APIView):
    token_scopes = {"GET": "threads:read", "POST": "threads:write"}

    @extend_schema(responses=run_types.ThreadState)
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(state.thread_state_get(thread=thread))

    @extend_schema(request=run_types.ThreadStateUpdate, responses=run_types.ThreadStateUpdated)
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = _body(request)
        unknown = set(body) - {"values", "checkpoint_id", "checkpoint", "as_node"}
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
        checkpoint_id = body.get("checkpoint_id") or (body.get("checkpoint") or {}).get("checkpoint_id")
        body = validated(run_types.ThreadStateUpdate, body)
        result = state.thread_state_update(thread=thread, values=body.get("values"), checkpoint_id=checkpoint_id, as_node=body.get("as_node"))
        return Response(result)


class ThreadStateAtCheckpointView(APIView):
    """``GET /threads/{id}/state/{checkpoint_id}``: the SDK's get_state(checkpoint_id=...)."""

    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=run_types.ThreadState, operation_id="threads_state_at_checkpoint")
    def get(self, request, thread_id, checkpoint_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(state.thread_state_get(thread=thread, checkpoint_id=checkpoint_id))


class ThreadStateCheckpointView(APIView):
    """``POST /threads/{id}/state/checkpoint``: the SDK's get_state(checkpoint=...)."""

    token_scopes = {"POST": "threads:read"}

    @extend_schema(request=run_types.ThreadStateCheckpoint, responses=run_types.ThreadState)
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        checkpoint = _body(request).get("checkpoint") or {}
        if not isinstance(checkpoint, dict) or not checkpoint.get("checkpoint_id"):
            raise InvalidRequest("checkpoint.checkpoint_id is required")
        return Response(state.thread_state_get(thread=thread, checkpoint_id=checkpoint["checkpoint_id"]))


class ThreadHistoryView(APIView):
    token_scopes = {"POST": "threads:read", "GET": "threads:read"}

    @extend_schema(request=run_types.ThreadHistory, responses=run_types.ThreadState(many=True))
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = validated(run_types.ThreadHistory, _body(request))
        return Response(state.thread_history(thread=thread, limit=_int(body.get("limit"), "limit", 10), before=body.get("before")))

    @extend_schema(responses=run_types.ThreadState(many=True))
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(state.thread_history(thread=thread, limit=_int(request.query_params.get("limit"), "limit", 10),
                                             before=request.query_params.get("before")))


class ThreadMessagesPageView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=run_types.MessagesPage)
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        if "after_seq" in request.query_params:
            raise InvalidRequest("after_seq is not supported here; page backwards with before_seq")
        page = messages_page(thread=thread, limit=_int(request.query_params.get("limit"), "limit", 50),
                             before_seq=_int(request.query_params.get("before_seq"), "before_seq"))
        attach_feedback(user=request.user, rows=page["data"])
        return Response(page)


class ThreadTokenUsageView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=run_types.ThreadTokenUsage)
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(thread_token_usage(thread=thread))
