"""``GET /api/threads/{id}/export?as=markdown|json``: a chat as a file to keep.

(``as``, not ``format``: DRF reserves ``?format=`` for picking its own renderer.)

What the chat shows, in order: the visible messages (replaced answers left out, as on the page),
who wrote each and when, the model of each answer, the tool calls made (name and arguments) with
their results cut to :data:`TOOL_RESULT_CHARS`, and the files attached to each question (listed by
name and size, not included). Markdown is for reading; JSON keeps the same content structured."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from django.http import HttpResponse
from rest_framework.views import APIView

from apps.chat.api_types import ThreadExport
from apps.errors import InvalidRequest
from apps.runs.selectors import messages_page
from apps.threads.selectors import thread_get_for_user

FORMATS = {"markdown": ("text/markdown; charset=utf-8", "md"), "json": ("application/json", "json")}
TOOL_RESULT_CHARS = 2000
PAGE = 200


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return ""


def thread_transcript(thread) -> list[dict]:
    """The visible conversation as plain data (what Export and a shared link hold)."""
    rows: list[dict] = []
    before = None
    while True:
        page = messages_page(thread=thread, limit=PAGE, before_seq=before)
        rows[:0] = page["data"]
        if not page["has_more"]:
            break
        before = page["next_before_seq"]
    out = []
    for row in rows:
        msg = row.get("content") or {}
        kwargs = msg.get("additional_kwargs") or {}
        if kwargs.get("hide_from_ui"):
            continue
        kind = msg.get("type")
        item: dict[str, Any] = {"role": {"human": "user", "ai": "assistant", "AIMessageChunk": "assistant", "tool": "tool"}.get(kind, kind),
                                "created_at": row.get("created_at"), "run_id": row.get("run_id"), "content": _text(msg.get("content"))}
        if item["role"] == "assistant":
            item["model"] = (row.get("metadata") or {}).get("model_name") or ""
            item["tool_calls"] = [{"name": c.get("name"), "args": c.get("args") or {}} for c in msg.get("tool_calls") or []]
            if not item["content"].strip() and not item["tool_calls"]:
                continue
        elif item["role"] == "user":
            item["files"] = [{"name": f.get("filename") or f.get("name") or f.get("path", "").rsplit("/", 1)[-1], "size": f.get("size"),
                              "path": f.get("path") or ""}
                             for f in kwargs.get("files") or [] if isinstance(f, dict)]
        elif item["role"] == "tool":
            item["name"] = msg.get("name") or ""
            full = item["content"]
            item["content"] = full if len(full) <= TOOL_RESULT_CHARS else full[:TOOL_RESULT_CHARS] + f"\n… ({len(full) - TOOL_RESULT_CHARS} more characters)"
        else:
            continue
        out.append(item)
    return out


def _markdown(title: str, exported: str, messages: list[dict]) -> str:
    lines = [f"# {title}", "", f"_Exported from DeerFlow on {exported}._", ""]
    for m in messages:
        when = m.get("created_at") or ""
        if m["role"] == "user":
            lines += [f"## You · {when}", "", m["content"], ""]
            if m.get("files"):
                lines += ["Attached: " + ", ".join(f"`{f['name']}`" + (f" ({f['size']} bytes)" if f.get("size") else "") for f in m["files"]), ""]
        elif m["role"] == "assistant":
            who = f"DeerFlow ({m['model']})" if m.get("model") else "DeerFlow"
            lines += [f"## {who} · {when}", ""]
            if m["content"].strip():
                lines += [m["content"], ""]
            for call in m.get("tool_calls") or []:
                lines += [f"Tool call `{call['name']}`:", "", "```json", json.dumps(call["args"], ensure_ascii=False, indent=2), "```", ""]
        else:
            fence = "````" if "```" in m["content"] else "```"
            lines += [f"Result of `{m.get('name')}`:", "", fence, m["content"], fence, ""]
    return "\n".join(lines).rstrip() + "\n"


def thread_export(*, thread, fmt: str) -> tuple[str, str, str]:
    """(file name, content type, body)."""
    if fmt not in FORMATS:
        raise InvalidRequest(f"as: one of {', '.join(FORMATS)}")
    title = thread.title or "Untitled chat"
    exported = datetime.now(timezone.utc).isoformat(timespec="seconds")
    messages = thread_transcript(thread)
    content_type, ext = FORMATS[fmt]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:60] or "chat"
    if fmt == "json":
        body = json.dumps({"thread_id": thread.pk, "title": title, "exported_at": exported, "messages": messages}, ensure_ascii=False, indent=2)
    else:
        body = _markdown(title, exported, messages)
    return f"{slug}.{ext}", content_type, body


class ThreadExportView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(parameters=[OpenApiParameter("as", str, enum=list(FORMATS), default="markdown")],
                   responses={(200, "text/markdown"): str, (200, "application/json"): ThreadExport}, tags=["threads"])
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        name, content_type, body = thread_export(thread=thread, fmt=request.query_params.get("as", "markdown"))
        response = HttpResponse(body, content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
