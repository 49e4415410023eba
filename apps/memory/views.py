"""``/api/memory``: the owner's memory document (API_CONTRACT §4). Every call answers with
the document; another user's memory is simply not reachable (each user sees their own)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.errors import InvalidRequest
from apps.memory import api_types as types
from apps.memory import services
from apps.memory.selectors import memory_get_for_user
from harness.config import get_app_config
from harness.memory.report import memory_config_json, memory_status_json

READ, WRITE = "threads:read", "threads:write"


def _agent(request) -> str:
    return str(request.query_params.get("agent") or "")


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise InvalidRequest("the body must be a JSON object")
    return request.data


class MemoryView(APIView):
    token_scopes = {"GET": READ, "DELETE": WRITE}

    @extend_schema(responses=types.MemoryDocument)
    def get(self, request):
        return Response(memory_get_for_user(user=request.user, agent=_agent(request)).to_api())

    @extend_schema(responses={200: types.MemoryDocument})
    def delete(self, request):
        return Response(services.memory_clear(user=request.user, agent=_agent(request)).to_api())


class MemoryExportView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses=types.MemoryDocument)
    def get(self, request):
        response = Response(memory_get_for_user(user=request.user, agent=_agent(request)).to_api())
        response["Content-Disposition"] = 'attachment; filename="memory.json"'
        return response


class MemoryImportView(APIView):
    token_scopes = {"POST": WRITE}

    @extend_schema(request=types.MemoryImport, responses=types.MemoryDocument)
    def post(self, request):
        return Response(services.memory_import(user=request.user, data=request.data, agent=_agent(request)).to_api())


class FactListView(APIView):
    token_scopes = {"POST": WRITE}

    @extend_schema(request=types.FactCreate, responses=types.MemoryDocument)
    def post(self, request):
        body = _body(request)
        doc = services.fact_create(user=request.user, content=body.get("content"), category=body.get("category", "context"),
                                   confidence=body.get("confidence", 0.5), agent=_agent(request))
        return Response(doc.to_api())


class FactDetailView(APIView):
    token_scopes = {"PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(request=types.FactPatch, responses=types.MemoryDocument)
    def patch(self, request, fact_id):
        body = _body(request)
        revision = body.get("revision")
        if revision is not None and not isinstance(revision, int):
            raise InvalidRequest("revision must be an integer")
        changes = {k: body[k] for k in ("content", "category", "confidence") if k in body}
        return Response(services.fact_update(user=request.user, fact_id=fact_id, changes=changes, revision=revision,
                                             agent=_agent(request)).to_api())

    @extend_schema(responses={200: types.MemoryDocument})
    def delete(self, request, fact_id):
        return Response(services.fact_delete(user=request.user, fact_id=fact_id, agent=_agent(request)).to_api())


class MemoryConfigView(APIView):
    """GET the memory settings; PATCH ``{paused}`` pauses or resumes the user's memory."""

    token_scopes = {"GET": READ, "PATCH": WRITE}

    def _answer(self, request, doc):
        return Response(memory_config_json(get_app_config().memory, doc))

    @extend_schema(responses=types.MemoryConfig)
    def get(self, request):
        return self._answer(request, memory_get_for_user(user=request.user, agent=_agent(request)))

    @extend_schema(request=types.MemoryPause, responses=types.MemoryConfig)
    def patch(self, request):
        paused = _body(request).get("paused")
        if not isinstance(paused, bool):
            raise InvalidRequest("paused must be true or false")
        return self._answer(request, services.memory_set_paused(user=request.user, paused=paused, agent=_agent(request)))


class MemoryStatusView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses=types.MemoryStatus)
    def get(self, request):
        doc = memory_get_for_user(user=request.user, agent=_agent(request))
        return Response(memory_status_json(get_app_config().memory, doc))
