"""Follow-up questions for the user after an answer: one short model call, parsed leniently
(reasoning blocks and code fences stripped, a JSON array or one question per line)."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from harness.agents.markers import neutralize_tags
from harness.errors import InvalidRequest

PROMPT = """Suggest {n} short follow-up questions the user might ask next, in the user's language.
Each at most 15 words, specific to the conversation, not repeating what was already answered.
Answer with a JSON array of strings only."""

MAX_CHARS = 4000  # of the conversation shown to the model: the call stays short
_THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)
_FENCE = re.compile(r"^```[a-zA-Z]*\n?|```$", re.M)


def _transcript(messages: list[dict]) -> str:
    lines = []
    for m in messages[-8:]:
        role = "User" if (m.get("role") or m.get("type")) in ("user", "human") else "Assistant"
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        lines.append(f"{role}: {neutralize_tags(str(content or ''))}")
    return "\n".join(lines)[-MAX_CHARS:]


def parse_suggestions(text: str, n: int) -> list[str]:
    text = _FENCE.sub("", _THINK.sub("", text or "")).strip()
    items: list[Any]
    try:
        start, end = text.index("["), text.rindex("]") + 1
        items = json.loads(text[start:end])
    except ValueError:
        items = [line.lstrip("-*0123456789. ").strip() for line in text.splitlines()]
    out: list[str] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, str) and item.strip() and item.strip() not in out:
            out.append(item.strip()[:200])
    return out[:n]


async def suggest(model: Any, messages: list[dict], n: int) -> list[str]:
    reply = await model.ainvoke([SystemMessage(content=PROMPT.format(n=n)), HumanMessage(content=_transcript(messages))])
    content = reply.content if isinstance(reply.content, str) else " ".join(
        p.get("text", "") for p in reply.content if isinstance(p, dict))
    return parse_suggestions(content, n)


def suggestions_config_json(app: Any) -> dict[str, Any]:
    cfg = app.suggestions
    return {"enabled": cfg.enabled, "max_suggestions": cfg.max_suggestions}


def check_request(app: Any, *, messages: Any, n: Any, model_name: Any) -> int:
    """The number of suggestions to ask for, or InvalidRequest naming the field."""
    limit = app.suggestions.max_suggestions
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= limit):
        raise InvalidRequest(f"n must be an integer from 1 to {limit}")
    if model_name is not None and (not isinstance(model_name, str) or app.get_model(model_name) is None):
        raise InvalidRequest(f"model_name: unknown model {model_name!r}")
    if messages is not None and (not isinstance(messages, list) or not all(isinstance(m, dict) and "content" in m for m in messages)):
        raise InvalidRequest("messages must be a list of {role, content} objects")
    return n or limit
