"""What a turn looks like to the console, whichever side runs it.

Both backends (a server over HTTP, the embedded client in-process) turn their own stream into
these few events, so the screen code has one vocabulary: text deltas joined by message id, a
tool call and its result paired by call id, a question (clarification or approval) that waits
for the user, a title, an error, and the run id a cancel needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

HIDDEN_KEYS = ("hide_from_ui", "deerflow_internal")
HIDDEN_ID_PREFIX = "deerflow-hidden-"


@dataclass
class Started:
    run_id: str | None


@dataclass
class Text:
    message_id: str
    delta: str


@dataclass
class ToolCall:
    call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolResult:
    call_id: str
    name: str
    content: str
    status: str = "success"


@dataclass
class Ask:
    """An interrupt value: ``{"type": "clarification" | "approval", "text", ...}``."""

    value: dict[str, Any]


@dataclass
class Title:
    title: str


@dataclass
class Failed:
    message: str


Event = Started | Text | ToolCall | ToolResult | Ask | Title | Failed


def content_text(content: Any) -> str:
    """A message's text: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) and b.get("type") == "text" else b if isinstance(b, str) else ""
                       for b in content)
    return ""


def is_hidden(message: dict[str, Any]) -> bool:
    kwargs = message.get("additional_kwargs") or {}
    return any(kwargs.get(k) for k in HIDDEN_KEYS) or str(message.get("id") or "").startswith(HIDDEN_ID_PREFIX)


def history_events(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """A stored conversation as ``("user", text)`` and turn events, for showing a resumed thread."""
    out: list[tuple[str, Any]] = []
    for m in messages:
        if is_hidden(m):
            continue
        kind = m.get("type")
        if kind == "human":
            out.append(("user", content_text(m.get("content"))))
        elif kind in ("ai", "AIMessageChunk"):
            if text := content_text(m.get("content")):
                out.append(("event", Text(str(m.get("id")), text)))
            for tc in m.get("tool_calls") or []:
                out.append(("event", ToolCall(str(tc.get("id")), str(tc.get("name")), dict(tc.get("args") or {}))))
        elif kind == "tool":
            out.append(("event", ToolResult(str(m.get("tool_call_id")), str(m.get("name") or ""),
                                            content_text(m.get("content")), str(m.get("status") or "success"))))
    return out


def pending_asks(tasks: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The interrupt values a thread's state waits on (``tasks[].interrupts[].value``)."""
    found = []
    for task in tasks or []:
        for it in task.get("interrupts") or []:
            value = it.get("value") if isinstance(it, dict) else None
            if isinstance(value, dict) and value.get("type") in ("clarification", "approval"):
                found.append(value)
    return found
