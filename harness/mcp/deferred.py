"""Deferred MCP tools: with ``tool_search.enabled`` the model sees only the names of MCP
tools until it asks for them with ``tool_search``, so dozens of schemas do not fill the
context on every call.

A search promotes the tools it returns: their names go into the thread's ``promoted``
state, so they stay visible for the rest of the thread and survive resume (state is
checkpointed). Routing hints promote tools too (``harness.mcp.routing``). The tools stay
registered with the agent either way; only what the model is shown changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Annotated, Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.types import Command

from harness.mcp.routing import McpRoutingMiddleware, routed, routing_prompt_section

MAX_RESULTS = 5
TOOL_SEARCH = "tool_search"


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


class DeferredToolsMiddleware(AgentMiddleware):
    def __init__(self, deferred: Sequence[BaseTool]) -> None:
        super().__init__()
        self.deferred = {t.name for t in deferred}

    def _filter(self, request: Any) -> Any:
        visible = set((request.state or {}).get("promoted") or [])
        tools = [t for t in request.tools if getattr(t, "name", None) not in self.deferred or t.name in visible]
        return request.override(tools=tools)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(self._filter(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(self._filter(request))


def apply_tool_search(tools: Sequence[BaseTool], enabled: bool, *,
                      auto_promote_top_k: int = 3) -> tuple[list[BaseTool], list[AgentMiddleware], list[str]]:
    """The tool list with ``tool_search`` added and the middlewares hiding MCP tools (and
    promoting the routed ones, before the filter runs) when on; and the prompt section of
    the routing hints, if any tool has them."""
    deferred = [t for t in tools if "mcp_server" in (t.metadata or {})]
    if not enabled or not deferred:
        section = routing_prompt_section(deferred, deferred=False)
        return list(tools), [], [section] if section else []
    entries = routed(deferred)
    middleware: list[AgentMiddleware] = [McpRoutingMiddleware(entries, auto_promote_top_k)] if entries else []
    section = routing_prompt_section(deferred, deferred=True)
    return [*tools, build_tool_search(deferred)], [*middleware, DeferredToolsMiddleware(deferred)], [section] if section else []
