"""The admin-only MCP API: thin views over selectors and services.

Session only: the settings can start programs on the host, so no personal access token
reaches them, not even one with the ``admin`` scope (TokenScopePermission refuses tokens here
because no ``token_scopes`` is set).
"""

from __future__ import annotations

from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import STAFF_ONLY
from apps.mcp import selectors, services


class McpConfigView(APIView):
    permission_classes = STAFF_ONLY  # and no token_scopes: no token, not even with admin

    def get(self, request):
        return Response(selectors.mcp_config_get())

    def put(self, request):
        return Response(services.mcp_config_replace(data=request.data))

    def patch(self, request):
        return Response(services.mcp_server_toggle(data=request.data))


class McpStatusView(APIView):
    permission_classes = STAFF_ONLY  # and no token_scopes: no token, not even with admin

    def get(self, request):
        return Response(selectors.mcp_status_list())


class McpServerTestView(APIView):
    permission_classes = STAFF_ONLY  # and no token_scopes: no token, not even with admin

    def post(self, request, name: str):
        return Response(services.mcp_server_test(name=name))
