"""Intercept ``ask_clarification``: show the question and pause the run for the answer.

The tool never runs. The middleware builds a readable text and a structured request
(``free_text``, ``choice_with_other``, or a ``form`` of at most 16 validated fields) and
calls LangGraph's ``interrupt()`` with both, so the run stops with an interrupt the API
and UI can render. Resuming with ``Command(resume=answer)`` (a string, or a dict of field
values for a form) turns the answer into the tool result and the model continues.

Form validation is all-or-nothing: a structurally broken field (bad or duplicate name,
too many fields or options, oversized text) degrades the whole request to a plain
question, so a half-rendered form can never silently drop a field. Benign problems are
repaired locally (an unknown type or a select without options becomes ``text``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.types import interrupt

from harness.agents.markers import run_value

TOOL_NAME = "ask_clarification"
MAX_FIELDS = 16
MAX_OPTIONS = 24
MAX_TEXT = 200
MAX_FORM_BYTES = 16 * 1024
FIELD_TYPES = frozenset({"text", "textarea", "number", "select", "multi_select", "checkbox", "date"})
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# names that collide with JavaScript object internals in the web client
_RESERVED = frozenset({"__proto__", "constructor", "prototype", "toString", "valueOf", "hasOwnProperty", "__defineGetter__", "__defineSetter__"})


class FormInvalid(ValueError):
    pass


def clean_options(options: Any) -> list[str]:
    if not isinstance(options, list):
        return []
    out: list[str] = []
    for opt in options:
        text = str(opt).strip() if isinstance(opt, str | int | float) else ""
        if text and text not in out:
            out.append(text[:MAX_TEXT])
    return out


def normalize_field(raw: Any, seen: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise FormInvalid("a field is not an object")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name) or name in _RESERVED or name in seen:
        raise FormInvalid(f"bad or duplicate field name {name!r}")
    seen.add(name)
    label = raw.get("label", name)
    if not isinstance(label, str) or len(label) > MAX_TEXT:
        raise FormInvalid(f"field {name!r} has a bad label")
    kind = raw.get("type", "text")
    kind = kind if isinstance(kind, str) and kind in FIELD_TYPES else "text"
    options = raw.get("options")
    if isinstance(options, list) and len(options) > MAX_OPTIONS:
        raise FormInvalid(f"field {name!r} has more than {MAX_OPTIONS} options")
    opts = clean_options(options)
    if kind in {"select", "multi_select"} and not opts:
        kind = "text"
    field: dict[str, Any] = {"name": name, "label": label.strip() or name, "type": kind, "required": bool(raw.get("required", False))}
    if kind in {"select", "multi_select"}:
        field["options"] = opts
    if kind == "checkbox":
        field["default"] = False
    help_text = raw.get("description") or raw.get("placeholder")
    if isinstance(help_text, str) and help_text.strip():
        field["description"] = help_text.strip()[:MAX_TEXT]
    return field


def build_request(args: dict[str, Any]) -> dict[str, Any]:
    question = str(args.get("question") or "").strip() or "Could you clarify what you need?"
    context = args.get("context")
    options = clean_options(args.get("options"))
    fields = args.get("fields")
    base: dict[str, Any] = {"question": question}
    if isinstance(context, str) and context.strip():
        base["context"] = context.strip()
    if fields:
        try:
            if not isinstance(fields, list) or len(fields) > MAX_FIELDS:
                raise FormInvalid(f"a form has at most {MAX_FIELDS} fields")
            seen: set[str] = set()
            normalized = [normalize_field(f, seen) for f in fields]
            request = {**base, "mode": "form", "version": 2, "fields": normalized}
            if len(json.dumps(request, ensure_ascii=False).encode()) > MAX_FORM_BYTES:
                raise FormInvalid("the form is too large")
            return request
        except FormInvalid:
            pass  # fall through to the plain modes below
    if options:
        return {**base, "mode": "choice_with_other", "version": 1, "options": options[:MAX_OPTIONS]}
    return {**base, "mode": "free_text", "version": 1}


def readable_text(request: dict[str, Any]) -> str:
    lines = [request["question"]]
    if request.get("context"):
        lines.insert(0, request["context"])
    if request["mode"] == "choice_with_other":
        lines += [f"{i}. {opt}" for i, opt in enumerate(request["options"], 1)]
        lines.append("(Or answer in your own words.)")
    elif request["mode"] == "form":
        for f in request["fields"]:
            extra = f" — one of: {', '.join(f['options'])}" if f.get("options") else ""
            lines.append(f"- {f['label']}{' (required)' if f['required'] else ''}{extra}")
    return "\n".join(lines)


def answer_text(answer: Any, request: dict[str, Any]) -> str:
    if isinstance(answer, dict):
        if "text" in answer and len(answer) <= 2:
            return str(answer["text"])
        labels = {f["name"]: f["label"] for f in request.get("fields", [])}
        return "\n".join(f"{labels.get(k, k)}: {v}" for k, v in answer.items())
    return str(answer)


class ClarificationMiddleware(AgentMiddleware):
    """``interactive=False`` (scheduled and channel runs nobody watches): the call is not
    intercepted, so the model gets the ordinary unknown-tool error instead of a run that
    waits forever."""

    def __init__(self, interactive: bool = True) -> None:
        super().__init__()
        self.interactive = interactive

    def _intercepts(self, request: Any) -> bool:
        return (request.tool_call["name"] == TOOL_NAME and self.interactive
                and not run_value(request.runtime, "non_interactive", False))

    def _handle(self, request: Any) -> ToolMessage:
        call = request.tool_call
        human_input = build_request(call.get("args") or {})
        text = readable_text(human_input)
        answer = interrupt({"type": "clarification", "tool_call_id": call["id"], "text": text, "human_input": human_input})
        reply = answer_text(answer, human_input)
        return ToolMessage(
            content=f"{text}\n\nThe user answered:\n{reply}",
            tool_call_id=call["id"], name=TOOL_NAME,
            artifact={"human_input": human_input, "response": answer},
        )

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return self._handle(request) if self._intercepts(request) else handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return self._handle(request) if self._intercepts(request) else await handler(request)
