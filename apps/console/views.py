"""Health endpoint, DeerFlow's feature flags, and the landing page."""

from django.shortcuts import render
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.console import selectors
from apps.runs.shutdown import draining

_component = inline_serializer("ComponentHealth", {"status": serializers.CharField(), "backend": serializers.CharField(), "error": serializers.CharField(required=False)})


class HealthView(APIView):
    """Liveness plus the two stores a run needs. 503 names what is down."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(
        responses={
            200: inline_serializer("Health", {"status": serializers.CharField(), "service": serializers.CharField(), "database": _component, "checkpointer": _component}),
            503: inline_serializer("HealthDown", {"detail": serializers.CharField(), "database": _component, "checkpointer": _component}),
        }
    )
    def get(self, request):
        components = {"database": selectors.database_health(), "checkpointer": selectors.checkpointer_health()}
        body = {name: c.as_dict() for name, c in components.items()}
        down = [f"{name} is down ({c.error})" for name, c in components.items() if c.status != "ok"]
        if down:
            return Response({"detail": "; ".join(down), "status": "unhealthy", "service": "deerflow", **body}, status=503)
        return Response({"status": "healthy", "service": "deerflow", **body})


class LiveView(APIView):
    """``GET /api/health/live``: the process answers. Touches nothing else: a database outage
    must not make an orchestrator restart every server (that is what readiness is for)."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(responses={200: inline_serializer("Live", {"status": serializers.CharField()})})
    def get(self, request):
        return Response({"status": "alive"})


class ReadyView(APIView):
    """``GET /api/health/ready``: this process should be sent traffic. Ready when the database
    answers, Redis answers (when configured), every migration is applied, and the process is
    not shutting down; otherwise 503 naming what is not. Cheap enough to poll every few seconds:
    one query, one ping, and the migration plan only until it was once found empty."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(
        responses={
            200: inline_serializer("Ready", {"status": serializers.CharField(), "database": _component,
                                             "redis": _component, "migrations": _component}),
            503: inline_serializer("NotReady", {"detail": serializers.CharField(), "status": serializers.CharField()}),
        }
    )
    def get(self, request):
        if draining():
            return Response({"detail": "shutting down", "status": "draining"}, status=503)
        components = {"database": selectors.database_health()}
        if components["database"].status == "ok":
            components["migrations"] = selectors.migrations_health()
        redis = selectors.redis_health()
        if redis is not None:
            components["redis"] = redis
        body = {name: c.as_dict() for name, c in components.items()}
        down = [f"{name}: {c.error}" for name, c in components.items() if c.status != "ok"]
        if down:
            return Response({"detail": "; ".join(down), "status": "not ready", **body}, status=503)
        return Response({"status": "ready", **body})


class FeaturesView(APIView):
    """``GET /api/features``: DeerFlow's frontend gates optional UI on these flags. The custom
    agents API is always here; the live browser-control routes and the durable MCP task
    runtime are not built (docs/api.md, "DeerFlow routes"), so their UI stays hidden."""

    token_scopes = {"GET": None}  # any valid token: nothing in it is per user

    @extend_schema(responses=inline_serializer("Features", {
        "agents_api": inline_serializer("AgentsApiFeature", {"enabled": serializers.BooleanField()}),
        "browser_control": inline_serializer("BrowserControlFeature", {"enabled": serializers.BooleanField()}),
        "mcp_tasks": inline_serializer("McpTasksFeature", {"enabled": serializers.BooleanField()}),
    }))
    def get(self, request):
        return Response({"agents_api": {"enabled": True}, "browser_control": {"enabled": False}, "mcp_tasks": {"enabled": False}})


def landing(request):
    return render(request, "console/landing.html")
