"""Deferred MCP tools: with ``tool_search.enabled`` the model sees only the names of MCP
tools until it asks for them with ``tool_search``, so dozens of schemas do not fill the
context on every call.

A search promotes the tools it returns: their names go into the thread's ``promoted``
state, so they stay visible for the rest of the thread and survive resume (state is
checkpointed). A routing hint (``routing.keywords`` on the server or the tool) whose
keyword appears in the user's latest message shows that tool for that message only. The
tools stay registered with the agent either way; only what the model is shown changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Annotated, Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.types import Command

from harness.mcp.tools import ROUTING_KEY

MAX_RESULTS = 5
TOOL_SEARCH = "tool_search"


def _keywords(routing: Any) -> list[str]:
    if isinstance(routing, dict):
        words = routing.get("keywords") or []
        return [w for w in words if isinstance(w, str) and w.strip()] if isinstance(words, list) else []
    return []


def search(catalog: Sequence[BaseTool], query: str) -> list[BaseTool]:
    """``select:a,b`` picks by exact name (no cap); other text matches name or description."""
    query = (query or "").strip()
    if query.startswith("select:"):
        wanted = [n.strip() for n in query[len("select:"):].split(",") if n.strip()]
        by_name = {t.name: t for t in catalog}
        return [by_name[n] for n in wanted if n in by_name]
    terms = [re.escape(t) for t in query.lower().split() if t]
    if not terms:
        return list(catalog[:MAX_RESULTS])
    pattern = re.compile("|".join(terms))
    scored = [(len(pattern.findall(f"{t.name} {t.name} {t.description}".lower())), i, t) for i, t in enumerate(catalog)]
    return [t for score, _, t in sorted(scored, key=lambda x: (-x[0], x[1])) if score][:MAX_RESULTS]


def build_tool_search(catalog: Sequence[BaseTool]) -> BaseTool:
    names = ", ".join(t.name for t in catalog)

    def tool_search(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        found = search(catalog, query)
        schemas = [convert_to_openai_tool(t)["function"] for t in found]
        text = json.dumps(schemas, ensure_ascii=False) if found else f"No tool matches {query!r}. Available: {names}"
        return Command(update={"promoted": [t.name for t in found],
                               "messages": [ToolMessage(text, tool_call_id=tool_call_id, name=TOOL_SEARCH)]})

    description = ("Load tools that exist but are not shown yet, then call them normally. Query with "
                   "'select:name1,name2' for exact names, or with keywords. Tools you can load: " + names)
    return StructuredTool.from_function(tool_search, name=TOOL_SEARCH, description=description)


def _latest_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            content = message.content
            if isinstance(content, list):
                content = " ".join(b.get("text", "") for b in content if isinstance(b, dict))
            return str(content)
    return ""


class DeferredToolsMiddleware(AgentMiddleware):
    def __init__(self, deferred: Sequence[BaseTool]) -> None:
        super().__init__()
        self.deferred = {t.name for t in deferred}
        self.routing = {t.name: [k.lower() for k in _keywords((t.metadata or {}).get(ROUTING_KEY))] for t in deferred}

    def _filter(self, request: Any) -> Any:
        state = request.state or {}
        visible = set(state.get("promoted") or [])
        text = _latest_user_text(request.messages).lower()
        visible |= {name for name, words in self.routing.items() if any(w in text for w in words)}
        tools = [t for t in request.tools if getattr(t, "name", None) not in self.deferred or t.name in visible]
        return request.override(tools=tools)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(self._filter(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(self._filter(request))


def apply_tool_search(tools: Sequence[BaseTool], enabled: bool) -> tuple[list[BaseTool], list[AgentMiddleware]]:
    """The tool list with ``tool_search`` added and the middleware hiding MCP tools, when on."""
    deferred = [t for t in tools if "mcp_server" in (t.metadata or {})]
    if not enabled or not deferred:
        return list(tools), []
    return [*tools, build_tool_search(deferred)], [DeferredToolsMiddleware(deferred)]
