"""Settings → Connections: a server-rendered shell; static/channels/connections.js talks to
``/api/channels/*``, so the page and the API cannot disagree."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie


@login_required
@ensure_csrf_cookie
def connections_page(request):
    """Settings → Connections: static/channels/connections.js talks to ``/api/channels/*``."""
    return render(request, "channels/connections.html")
