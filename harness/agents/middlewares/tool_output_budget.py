"""Cap what a tool result puts back into the context.

A single ``cat`` of a log or a huge page can fill the context window and crowd out the
conversation; the head and tail usually carry what matters, so the middle is cut with a
note saying how much was removed.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from harness.agents.middlewares._base import map_tool_messages

DEFAULT_MAX_CHARS = 24000


def cap_text(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n\n[... {omitted} characters omitted from this tool result ...]\n\n{text[-tail:]}"


class ToolOutputBudgetMiddleware(AgentMiddleware):
    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        super().__init__()
        self.max_chars = max_chars

    def _cap(self, msg: ToolMessage) -> ToolMessage:
        if isinstance(msg.content, str) and len(msg.content) > self.max_chars:
            return msg.model_copy(update={"content": cap_text(msg.content, self.max_chars)})
        return msg

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return map_tool_messages(handler(request), self._cap)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return map_tool_messages(await handler(request), self._cap)
