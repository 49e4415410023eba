"""Custom agents (``/api/agents``, API_CONTRACT §4) and the assistants API the official
langgraph-sdk calls (``/api/assistants``), both over the same agents; and the model list."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.agents import api_types as types
from apps.agents import selectors, services
from apps.errors import Forbidden, InvalidRequest, NotFound
from apps.runs.graphs import LEAD_AGENT

READ, WRITE = "threads:read", "threads:write"


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise InvalidRequest("body: must be a JSON object")
    return request.data


def _paging(body: dict) -> tuple[int, int]:
    try:
        limit, offset = int(body.get("limit", 10)), int(body.get("offset", 0))
    except (TypeError, ValueError):
        raise InvalidRequest("limit and offset must be integers") from None
    if limit < 0 or offset < 0:
        raise InvalidRequest("limit and offset must not be negative")
    return limit, offset


# -- /api/agents ------------------------------------------------------------------------


class AgentListView(APIView):
    token_scopes = {"GET": READ, "POST": WRITE}

    @extend_schema(responses=types.AgentList, operation_id="agents_list")
    def get(self, request):
        agents = selectors.agent_list_for_user(user=request.user, query=str(request.query_params.get("q") or "").strip())
        return Response({"agents": [selectors.agent_to_dict(a, user=request.user) for a in agents]})

    @extend_schema(request=types.AgentWrite, responses={201: types.Agent})
    def post(self, request):
        agent = services.agent_create(owner=request.user, data=_body(request))
        return Response(selectors.agent_to_dict(agent, user=request.user), status=status.HTTP_201_CREATED)


class AgentCheckView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses=types.AgentNameCheck)
    def get(self, request):
        name = services.check_name(request.query_params.get("name"))
        return Response({"available": selectors.agent_name_available(user=request.user, name=name), "name": name})


class AgentDetailView(APIView):
    token_scopes = {"GET": READ, "PUT": WRITE, "PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(responses=types.Agent)
    def get(self, request, name):
        return Response(selectors.agent_to_dict(selectors.agent_get_for_user(user=request.user, key=name), user=request.user))

    @extend_schema(request=types.AgentWrite, responses=types.Agent)
    def put(self, request, name):
        agent = services.agent_update(agent=self._owned(request, name), data=_body(request))
        return Response(selectors.agent_to_dict(agent, user=request.user))

    @extend_schema(request=types.AgentWrite, responses=types.Agent)
    def patch(self, request, name):
        return self.put(request, name)

    @extend_schema(responses={204: None})
    def delete(self, request, name):
        services.agent_delete(agent=self._owned(request, name))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _owned(request, name):
        agent = selectors.agent_get_for_user(user=request.user, key=name)
        if agent.owner_id != request.user.pk:
            # Visible (shared) but not theirs: saying so is no leak, and clearer than a 404.
            raise Forbidden(f"Agent {name} is shared with you read-only; duplicate it to make your own copy")
        return agent


class AgentDuplicateView(APIView):
    token_scopes = {"POST": WRITE}

    @extend_schema(request=types.AgentDuplicate, responses={201: types.Agent})
    def post(self, request, name):
        source = selectors.agent_get_for_user(user=request.user, key=name)
        new_name = _body(request).get("name") if request.data else None
        agent = services.agent_duplicate(agent=source, owner=request.user, name=new_name)
        return Response(selectors.agent_to_dict(agent, user=request.user), status=status.HTTP_201_CREATED)


class AgentVersionsView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses=types.AgentVersions)
    def get(self, request, name):
        agent = selectors.agent_get_for_user(user=request.user, key=name)
        rows = agent.versions.order_by("-version")[:100]
        return Response({"versions": [{"version": v.version, "created_at": v.created_at.isoformat(), "settings": v.snapshot} for v in rows]})


# -- /api/assistants (LangGraph-compatible) -----------------------------------------------


class AssistantCreateView(APIView):
    token_scopes = {"POST": WRITE}

    @extend_schema(request=types.AssistantWrite, responses=types.Assistant)
    def post(self, request):
        agent, _ = services.assistant_create(owner=request.user, body=_body(request))
        return Response(selectors.agent_to_assistant(agent))


class AssistantSearchView(APIView):
    token_scopes = {"POST": READ}

    @extend_schema(request=types.AssistantSearch, responses=types.Assistant(many=True))
    def post(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        limit, offset = _paging(body)
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else None
        return Response(selectors.assistant_search(user=request.user, graph_id=body.get("graph_id"), name=body.get("name"),
                                                   metadata=metadata, limit=limit, offset=offset))


class AssistantCountView(APIView):
    token_scopes = {"POST": READ}

    @extend_schema(request=types.AssistantSearch, responses=OpenApiTypes.INT)
    def post(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else None
        return Response(len(selectors.assistant_search(user=request.user, graph_id=body.get("graph_id"), name=body.get("name"),
                                                       metadata=metadata, limit=10_000)))


def _owned_agent(request, assistant_id: str):
    if assistant_id == LEAD_AGENT:
        raise Forbidden("lead_agent is built in and cannot be changed")
    try:
        agent = selectors.agent_get_for_user(user=request.user, key=assistant_id)
    except NotFound:
        raise NotFound(f"Assistant {assistant_id} not found") from None
    if agent.owner_id != request.user.pk:
        raise Forbidden(f"Assistant {assistant_id} is shared with you read-only")
    return agent


class AssistantDetailView(APIView):
    token_scopes = {"GET": READ, "PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(responses=types.Assistant)
    def get(self, request, assistant_id):
        return Response(selectors.assistant_get(user=request.user, assistant_id=assistant_id))

    @extend_schema(request=types.AssistantWrite, responses=types.Assistant)
    def patch(self, request, assistant_id):
        agent = services.assistant_update(agent=_owned_agent(request, assistant_id), body=_body(request))
        return Response(selectors.agent_to_assistant(agent))

    @extend_schema(responses={204: None})
    def delete(self, request, assistant_id):
        if request.query_params.get("delete_threads") in ("true", "True", "1"):
            raise InvalidRequest("delete_threads: not supported; an agent's threads stay readable after it is deleted")
        services.agent_delete(agent=_owned_agent(request, assistant_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AssistantVersionsView(APIView):
    token_scopes = {"POST": READ}

    @extend_schema(request=types.AssistantSearch, responses=types.Assistant(many=True))
    def post(self, request, assistant_id):
        body = request.data if isinstance(request.data, dict) else {}
        limit, offset = _paging(body)
        return Response(selectors.assistant_versions(user=request.user, assistant_id=assistant_id, limit=limit, offset=offset))


class AssistantGraphView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses=types.AssistantGraph)
    def get(self, request, assistant_id):
        assistant = selectors.assistant_get(user=request.user, assistant_id=assistant_id)
        return Response({"graph_id": assistant["graph_id"], "nodes": [], "edges": []})


class AssistantSchemasView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses=types.AssistantSchemas)
    def get(self, request, assistant_id):
        assistant = selectors.assistant_get(user=request.user, assistant_id=assistant_id)
        return Response({"graph_id": assistant["graph_id"], "input_schema": {}, "output_schema": {}, "state_schema": {}, "config_schema": {}, "context_schema": {}})


class ModelListView(APIView):
    token_scopes = {"GET": None}  # any valid token: scripts pick a model_name from here
    @extend_schema(responses=types.ModelList, operation_id="models_list")
    def get(self, request):
        # token_usage: DeerFlow's frontend shows per-thread usage when on; ours is always recorded.
        return Response({"models": selectors.model_list(), "token_usage": {"enabled": True}})


class ModelDetailView(APIView):
    """``GET /api/models/{name}``: one entry of the list; 404 ``Model '<name>' not found``."""

    token_scopes = {"GET": None}  # as the list

    @extend_schema(responses=types.Model)
    def get(self, request, name):
        return Response(selectors.model_get(name))
