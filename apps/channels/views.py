"""The channels API (API_CONTRACT §4): providers, the user's connections, connect codes.
Session callers only: connecting an account is done by a person in the browser."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import TokenScopePermission
from apps.channels import api_types as types
from apps.channels import connections, selectors

_USER = [IsAuthenticated, TokenScopePermission]


class ChannelProvidersView(APIView):
    permission_classes = _USER

    @extend_schema(responses=types.Providers)
    def get(self, request):
        return Response(selectors.providers_list(staff=request.user.is_staff))


class ChannelConnectionsView(APIView):
    permission_classes = _USER

    @extend_schema(responses=types.Connections)
    def get(self, request):
        rows = connections.connection_list_for_user(user=request.user)
        return Response({"connections": [connections.connection_serialize(c) for c in rows]})


class ChannelConnectionDetailView(APIView):
    permission_classes = _USER

    @extend_schema(responses={204: None})
    def delete(self, request, connection_id: str):
        connections.connection_revoke_for_user(user=request.user, connection_id=connection_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ChannelConnectView(APIView):
    permission_classes = _USER

    @extend_schema(request=None, responses=types.ConnectCode)
    def post(self, request, provider: str):
        cls, settings, section, bot_name = selectors.connectable_provider(provider)
        issued = connections.connect_code_issue(user=request.user, provider=provider, ttl_seconds=settings.connect_code_ttl)
        url, instruction = cls.connect_hint(issued.code, bot_name=bot_name, settings=section)
        return Response({"provider": provider, "mode": "code", "url": url, "code": issued.code, "instruction": instruction,
                         "expires_in": issued.expires_in, "expires_at": issued.expires_at.isoformat()})
