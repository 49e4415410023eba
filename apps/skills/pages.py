"""The Skills page: a server-rendered shell; static/skills/skills.js talks to ``/api/skills``
(the same API scripts use), so the page and the API cannot disagree."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie


@login_required
@ensure_csrf_cookie
def skills_page(request):
    return render(request, "skills/index.html")
