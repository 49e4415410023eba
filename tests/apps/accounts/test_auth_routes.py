"""`manage.py auth_routes` and the wiring every API view must have for tokens to be safe."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from apps.accounts.authentication import PersonalAccessTokenAuthentication
from apps.accounts.permissions import TokenScopePermission
from apps.accounts.routes import route_table


def _lines(*args) -> dict[str, str]:
    out = io.StringIO()
    call_command("auth_routes", *args, stdout=out)
    return {re.split(r"\s{2,}", line.strip())[0]: line for line in out.getvalue().splitlines()}


@pytest.mark.urls("tests.apps.accounts.probe_urls")
def test_auth_routes_reads_rules_from_the_views():
    lines = _lines()
    expected = {
        "/api/me": r"GET\s+session \| token: GET any scope$",
        "/api/tokens/": r"GET POST\s+session$",
        "/api/tokens/<int:token_id>/": r"DELETE\s+session$",
        "/api/health": r"GET\s+public$",
        # The throwaway views: their own token_scopes, nothing configured elsewhere.
        "/api/_probe/": r"GET POST DELETE\s+session \| token: GET threads:read, POST runs:create$",
        "/api/_session_only/": r"GET\s+session$",
        "/_plain_token/": r"\*\s+page \| token: GET runs:read, POST runs:create$",
        "/accounts/tokens/": r"\*\s+session$",
        "/accounts/login/": r"public$",
        "/accounts/password/change/": r"session$",
        "/admin/…": r"admin \(\d+ Django admin routes; --admin lists them\)$",
        "/admin/login/": r"public$",
    }
    for path, pattern in expected.items():
        assert path in lines, path
        assert re.search(pattern, lines[path]), lines[path]
    sockets = [line for path, line in lines.items() if path.startswith("/ws/")]
    assert sockets and all(re.search(r"WS\s+session \(websocket\)$", line) for line in sockets)
    admin_lines = _lines("--admin", "--prefix", "/admin/")
    assert "/admin/" in admin_lines and admin_lines["/admin/"].rstrip().endswith("admin")
    assert all(path.startswith("/admin/") for path in admin_lines)


def test_every_api_view_decides_bearer_calls_by_the_token_alone():
    """A view that drops the token class would let a bad bearer fall back to the session cookie,
    and one that drops TokenScopePermission would ignore scopes: both are caught here."""
    checked = 0
    for route in route_table():
        cls = getattr(route.callback, "cls", None)
        if not route.path.startswith("/api/") or not (isinstance(cls, type) and issubclass(cls, APIView)):
            continue
        if route.rule == "public" and all(p is AllowAny for p in cls.permission_classes):
            continue
        checked += 1
        authentication = list(cls.authentication_classes)
        assert authentication and issubclass(authentication[0], PersonalAccessTokenAuthentication), route.path
        assert any(issubclass(p, TokenScopePermission) for p in cls.permission_classes), route.path
    assert checked >= 3  # me, tokens, token detail at least


@pytest.mark.django_db
def test_the_openapi_schema_names_the_scope_each_operation_needs(client):
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    assert paths["/api/me"]["get"]["security"] == [{"personalAccessToken": []}, {"cookieAuth": []}]
    # Token management is for the browser only: no bearer scheme offered there.
    assert paths["/api/tokens/"]["post"]["security"] == [{"cookieAuth": []}]
    assert paths["/api/tokens/{token_id}/"]["delete"]["security"] == [{"cookieAuth": []}]
