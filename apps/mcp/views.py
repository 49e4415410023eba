"""The admin-only MCP API: thin views over selectors and services.

Session only: the settings can start programs on the host, so no personal access token
reaches them, not even one with the ``admin`` scope (TokenScopePermission refuses tokens here
because no ``token_scopes`` is set).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import STAFF_ONLY
from apps.mcp import api_types as types
from apps.mcp import selectors, services


class McpConfigView(APIView):
    permission_classes = STAFF_ONLY  # and no token_scopes: no token, not even with admin

    @extend_schema(responses=types.McpConfig)
    def get(self, request):
        return Response(selectors.mcp_config_get())

    @extend_schema(request=types.McpConfig, responses=types.McpConfig)
    def put(self, request):
        return Response(services.mcp_config_replace(data=request.data))

    @extend_schema(request=types.McpToggle, responses=types.McpConfig)
    def patch(self, request):
        return Response(services.mcp_server_toggle(data=request.data))


class McpStatusView(APIView):
    permission_classes = STAFF_ONLY  # and no token_scopes: no token, not even with admin

    @extend_schema(responses=types.McpStatus)
    def get(self, request):
        return Response(selectors.mcp_status_list())


class McpServerTestView(APIView):
    permission_classes = STAFF_ONLY  # and no token_scopes: no token, not even with admin

    @extend_schema(request=None, responses=types.McpServerStatus)
    def post(self, request, name: str):
        return Response(services.mcp_server_test(name=name))
