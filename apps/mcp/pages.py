"""The MCP settings page (admins only): a server-rendered shell; static/mcp/mcp.js
talks to ``/api/mcp/*``, so the page and the API cannot disagree."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie


@login_required
@ensure_csrf_cookie
def mcp_settings_page(request):
    if not request.user.is_staff:
        raise PermissionDenied("MCP settings are for administrators")
    return render(request, "mcp/mcp.html")
