"""The pages of shared chats: the public read-only snapshot (``/s/<token>/``), its files when
the owner included them, and the owner's list in Settings (``/settings/shares``).

The public page is the snapshot and nothing else: no composer, no sidebar, no link to the
owner's chats; anyone holding the link sees the same thing, signed in or not. It is kept out
of search engines (``noindex``), caches (``no-store``, so a revoke takes effect at once) and
other sites' logs (``Referrer-Policy: no-referrer``: the token is in the URL).
"""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from apps.chat import artifacts
from apps.errors import DomainError, NotFound
from apps.shares import selectors
from apps.shares.tokens import share_token

# The same rules as the thread's own file route (apps/chat/artifact_views.py).
FRAME_ANCESTORS = "frame-ancestors 'self'"


def _private(response: HttpResponse) -> HttpResponse:
    response["X-Robots-Tag"] = "noindex, nofollow, noarchive"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    return response


def _gone(request) -> HttpResponse:
    return _private(render(request, "shares/gone.html", status=404))


def _view_messages(share) -> list[dict]:
    """The snapshot as the template draws it: tool arguments as indented JSON, each file with
    its link when the owner included files."""
    reachable = {f["path"] for f in share.files or []} if share.include_files else set()
    out = []
    for m in share.messages or []:
        item = dict(m)
        if m.get("role") == "assistant":
            item["tool_calls"] = [{"name": c.get("name"), "args": json.dumps(c.get("args") or {}, ensure_ascii=False, indent=2)}
                                  for c in m.get("tool_calls") or []]
        if m.get("role") == "user":
            item["files"] = [{**f, "reachable": f.get("path") in reachable} for f in m.get("files") or []]
        out.append(item)
    return out


def shared_chat(request, token: str):
    try:
        share = selectors.share_for_visitor(token=token)
    except NotFound:
        return _gone(request)
    presented = [f for f in share.files or [] if not any(f["path"] == a.get("path") for m in share.messages or [] for a in m.get("files") or [])]
    return _private(render(request, "shares/public.html", {
        "share": share, "token": token, "messages": _view_messages(share), "presented": presented if share.include_files else [],
        "presented_count": len(presented)}))


def shared_file(request, token: str, path: str):
    """A file the snapshot names, from the chat's folders, when the owner included files."""
    try:
        share = selectors.share_for_visitor(token=token)
        entry = selectors.share_file(share=share, path="/" + path)
        artifact = artifacts.artifact_get(thread=share.thread, path=entry["path"].lstrip("/"))
    except DomainError:
        # Not shared, not included, gone from the disk, or a path that is refused: one answer.
        return _gone(request)
    if artifact.data is not None:
        response = HttpResponse(artifact.data, content_type=artifact.content_type)
    else:
        response = FileResponse(artifact.real.open("rb"), content_type=artifact.content_type)
    response["X-Content-Type-Options"] = "nosniff"
    if artifacts.is_active_content(artifact.content_type):
        response["Content-Disposition"] = f'attachment; filename="{artifact.name.encode("ascii", "ignore").decode() or "download"}"'
        response["Content-Security-Policy"] = f"sandbox; default-src 'none'; {FRAME_ANCESTORS}"
    else:
        response["Content-Security-Policy"] = FRAME_ANCESTORS
    return _private(response)


@login_required
@ensure_csrf_cookie
def shares_settings(request):
    shares = selectors.share_list(owner=request.user)
    rows = [{"share": s, "url": request.build_absolute_uri(f"/s/{share_token(s.id)}/")} for s in shares]
    return render(request, "shares/settings.html", {"rows": rows})
