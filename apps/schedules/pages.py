"""The scheduled-tasks page: a server-rendered shell; static/schedules/schedules.js talks to
``/api/scheduled-tasks`` (the same API scripts use), so the page and the API cannot disagree."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from apps.agents.selectors import model_list


@login_required
@ensure_csrf_cookie
def schedules_page(request):
    models = [{"name": m["name"], "label": m["display_name"] or m["name"]} for m in model_list() if m["available"]]
    return render(request, "schedules/index.html", {"page_data": {"models": models}})
