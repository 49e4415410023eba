"""DeerFlow's MCP routing hints (``routing: {mode: prefer, priority, keywords}`` on a server
or one of its tools in ``extensions_config.json``).

Two effects, both soft (no other tool is ever forbidden):

* the system prompt gains a short section telling the model which MCP tool to prefer for
  requests mentioning the keywords, highest priority first; it is built with the agent, so
  the graph cache keeps it, and a config without hints adds nothing to the prompt;
* with ``tool_search`` on, :class:`McpRoutingMiddleware` promotes, before a model call, the
  deferred tools whose keywords the user's latest message contains (a case-insensitive
  substring test, as DeerFlow does), at most ``tool_search.auto_promote_top_k`` of them,
  highest priority first. Promotions go into the thread's ``promoted`` state, like a
  ``tool_search`` result, so they stay for the rest of the thread.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import BaseTool

from harness.agents.markers import CONTEXT_TAG, is_real_user_message, message_text
from harness.mcp.tools import ROUTING_KEY

_CONTEXT_BLOCK = re.compile(rf"<{CONTEXT_TAG}\b.*?</{CONTEXT_TAG}>", re.S)
_UNSAFE = re.compile(r"[`\r\n<>]")


def routed(tools: Sequence[BaseTool]) -> list[tuple[int, str, tuple[str, ...]]]:
    """(priority, tool name, keywords) of every tool whose routing is ``prefer`` with
    keywords, highest priority first, then by name."""
    entries = []
    for tool in tools:
        routing = (tool.metadata or {}).get(ROUTING_KEY)
        if isinstance(routing, dict) and routing.get("mode") == "prefer" and routing.get("keywords"):
            entries.append((int(routing.get("priority") or 0), tool.name, tuple(routing["keywords"])))
    return sorted(entries, key=lambda e: (-e[0], e[1]))


def _clean(text: str) -> str:
    # Tool names come from the MCP server, keywords from the operator: neither may break
    # out of the list line or open a framework tag.
    return _UNSAFE.sub(" ", text).strip()


def _words(keywords: Sequence[str]) -> str:
    quoted = [f'"{_clean(k)}"' for k in keywords]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def routing_prompt_section(tools: Sequence[BaseTool], *, deferred: bool) -> str:
    """The prompt section for the routed tools, or "" when there are none. ``deferred``: MCP
    tools are hidden behind ``tool_search``, so the model is told to load the tool first."""
    entries = routed(tools)
    if not entries:
        return ""
    lines = ["", "## Preferred MCP tools",
             "The operator prefers these tools for matching requests; other tools stay allowed when they fit better."]
    for _, name, keywords in entries:
        how = f"load `{_clean(name)}` with `tool_search`, then prefer it" if deferred else f"prefer `{_clean(name)}`"
        lines.append(f"- A request about {_words(keywords)}: {how}.")
    return "\n".join(lines) + "\n"


def _latest_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if is_real_user_message(message):
            return _CONTEXT_BLOCK.sub(" ", message_text(message))
    return ""


class McpRoutingMiddleware(AgentMiddleware):
    """Promotes the deferred tools the latest user message asks for by keyword. Installed
    only when some deferred tool has ``prefer`` routing, so other agents pay nothing."""

    def __init__(self, entries: Sequence[tuple[int, str, tuple[str, ...]]], top_k: int) -> None:
        super().__init__()
        self.entries = [(name, tuple(w.casefold() for w in words)) for _, name, words in entries]
        self.top_k = top_k

    def _update(self, state: Any) -> dict[str, Any] | None:
        text = _latest_user_text((state or {}).get("messages") or []).casefold()
        if not text:
            return None
        names = [name for name, words in self.entries if any(w in text for w in words)][:self.top_k]
        promoted = set((state or {}).get("promoted") or [])
        new = [n for n in names if n not in promoted]
        # Only new names are written: a step that changes nothing adds nothing to the checkpoint.
        return {"promoted": new} if new else None

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._update(state)

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._update(state)
