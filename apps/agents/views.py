"""Assistants (LangGraph-compatible) and the model list."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.agents.selectors import assistant_get, assistant_search, model_list
from deerflow_site.errors import InvalidRequest


class AssistantSearchView(APIView):
    token_scopes = {"POST": "threads:read"}

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def post(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        try:
            limit, offset = int(body.get("limit", 10)), int(body.get("offset", 0))
        except (TypeError, ValueError):
            raise InvalidRequest("limit and offset must be integers") from None
        return Response(assistant_search(graph_id=body.get("graph_id"), name=body.get("name"), limit=limit, offset=offset))


class AssistantDetailView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, assistant_id):
        return Response(assistant_get(assistant_id=assistant_id))


class AssistantGraphView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, assistant_id):
        assistant = assistant_get(assistant_id=assistant_id)
        return Response({"graph_id": assistant["graph_id"], "nodes": [], "edges": []})


class AssistantSchemasView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, assistant_id):
        assistant = assistant_get(assistant_id=assistant_id)
        return Response({"graph_id": assistant["graph_id"], "input_schema": {}, "output_schema": {}, "state_schema": {}, "config_schema": {}, "context_schema": {}})


class ModelListView(APIView):
    token_scopes = {"GET": None}  # any valid token: scripts pick a model_name from here
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response({"models": model_list()})
