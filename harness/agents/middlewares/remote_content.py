"""Neutralize framework tags in content fetched from the web.

A fetched page is attacker-controlled text; if it contains ``<deerflow-context>`` or
``<system>`` it must read as data, not as context the harness wrote. Local tool output
(bash, read_file) is the user's own data and is left as is.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from harness.agents.markers import neutralize_tags
from harness.agents.middlewares._base import map_tool_messages

REMOTE_CONTENT_TOOLS = frozenset({"web_search", "web_fetch", "fetch_url", "image_search", "web_capture", "crawl"})


class RemoteContentSanitizationMiddleware(AgentMiddleware):
    def __init__(self, tool_names: frozenset[str] | set[str] = REMOTE_CONTENT_TOOLS) -> None:
        super().__init__()
        self.tool_names = frozenset(tool_names)

    def _clean(self, msg: ToolMessage) -> ToolMessage:
        if isinstance(msg.content, str):
            return msg.model_copy(update={"content": neutralize_tags(msg.content)})
        if isinstance(msg.content, list):
            blocks = [{**b, "text": neutralize_tags(str(b.get("text", "")))} if isinstance(b, dict) and b.get("type") == "text" else b for b in msg.content]
            return msg.model_copy(update={"content": blocks})
        return msg

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        result = handler(request)
        return map_tool_messages(result, self._clean) if request.tool_call["name"] in self.tool_names else result

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        result = await handler(request)
        return map_tool_messages(result, self._clean) if request.tool_call["name"] in self.tool_names else result
