"""The Agents gallery page: a server-rendered shell; static/agents/agents.js talks to
``/api/agents`` (the same API scripts use). The first paint gets the configured models and
tool groups, which the editor offers as choices."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from apps.agents.selectors import model_list
from apps.agents.services import REASONING_EFFORTS, tool_group_names


@login_required
@ensure_csrf_cookie
def agents_page(request):
    boot = {"models": model_list(), "tool_groups": sorted(tool_group_names()), "reasoning_efforts": list(REASONING_EFFORTS)}
    return render(request, "agents/index.html", {"boot": boot})
