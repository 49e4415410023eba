"""The chat workspace pages (server-rendered shell; static/chat/app.js does the rest).

The page carries only what the first paint needs — the user, the configured models and
the thread id — as JSON in a ``json_script`` block; messages, threads and files come from
the API and the websocket, so a reload and a live session render through one code path.
"""

from __future__ import annotations

import re

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views import View
from django.views.decorators.csrf import ensure_csrf_cookie

from apps.agents.selectors import agent_picker_list, model_list
from apps.chat import bundles
from apps.errors import NotFound
from apps.threads.selectors import thread_get_for_user
from harness.config import get_app_config
from harness.config.paths import resolve_config_path


def home(request):
    """Signed in: a new chat. Signed out: the landing page with sign-in links."""
    if not request.user.is_authenticated:
        return render(request, "console/landing.html")
    return _chat(request, thread_id=None)


@login_required
def thread_page(request, thread_id: str):
    try:
        thread_get_for_user(user=request.user, thread_id=thread_id)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    return _chat(request, thread_id=thread_id)


def _without_path(reason: str | None, config_path: str) -> str | None:
    if not reason or not config_path:
        return reason
    return reason.replace(f"{config_path}: ", "").replace(config_path, "the server's config file")


def _for_viewer(models: list[dict], *, staff: bool, config_path: str) -> list[dict]:
    """A model's unavailable reason names the config file it came from: server detail that
    only staff see. Everyone else gets the reason without the path; the picker's short
    reason never has it (it must fit an option)."""
    out = []
    for m in models:
        short = _without_path(m.get("unavailable_reason"), config_path)
        out.append({**m, "unavailable_reason": m.get("unavailable_reason") if staff else short, "short_reason": short})
    return out


@ensure_csrf_cookie
def _chat(request, *, thread_id: str | None):
    staff = request.user.is_staff
    config_path = str(resolve_config_path())
    models = _for_viewer(model_list(), staff=staff, config_path=config_path)
    boot = {
        "thread_id": thread_id,
        "user": {"username": request.user.get_username(), "is_staff": staff},
        "models": models,
        "agents": agent_picker_list(user=request.user),
        "ws_path": "/ws/threads/",
        "input_polish": get_app_config().input_polish.enabled,
    }
    return render(request, "chat/chat.html", {
        "boot": boot,
        "models": models,
        "has_model": any(m["available"] for m in models),
        # "No model is configured" only when the list is empty; otherwise none is *available*
        "models_configured": bool(models),
        # none may be picked (all failed the probe): show the first, runs use the default model
        "any_selectable": any(m.get("selectable", m["available"]) for m in models),
        "subagents_enabled": get_app_config().subagents.enabled,
        # where to fix a missing model; the path is shown to staff only (it is server detail)
        "config_path": config_path if staff else "",
    })


_BUNDLE_NAME = re.compile(r"(?P<name>[a-z]+)\.(?P<digest>[0-9a-f]+)\.(?P<kind>js|css)")


class BundleView(View):
    """``/bundles/chat.<digest>.js`` and ``.css``: the chat page's modules as one file each
    (apps/chat/bundles.py). Public, as the static files it joins are. The digest names the
    content, so the browser may keep it for good; a page that asks with an older digest (it
    was rendered before a file changed) gets the current content, not to be kept."""

    def get(self, request, filename: str):
        match = _BUNDLE_NAME.fullmatch(filename)
        if match is None or match["name"] != bundles.NAME:
            raise Http404(f"no bundle named {filename}")
        bundle = bundles.bundle(match["kind"])
        response = HttpResponse(bundle.content, content_type=bundles.KINDS[bundle.kind][0])
        if match["digest"] == bundle.digest:
            response["Cache-Control"] = "public, max-age=31536000, immutable"
        else:
            response["Cache-Control"] = "no-cache"
        return response
