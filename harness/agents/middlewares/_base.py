"""Small shared pieces for the middlewares."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.types import Command

from harness.agents.markers import is_real_user_message


def current_run_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Messages since the latest real (non-hidden) user message, that message excluded."""
    for i in range(len(messages) - 1, -1, -1):
        if is_real_user_message(messages[i]):
            return messages[i + 1 :]
    return list(messages)


def last_ai(messages: list[BaseMessage]) -> AIMessage | None:
    for m in reversed(messages):
        if isinstance(m, AIMessage):
            return m
    return None


def map_tool_messages(result: ToolMessage | Command | Any, fn) -> Any:
    """Apply *fn* to the ToolMessage(s) a tool produced, whether returned directly or
    inside a ``Command`` update."""
    if isinstance(result, ToolMessage):
        return fn(result)
    if isinstance(result, Command) and isinstance(result.update, dict) and result.update.get("messages"):
        msgs = [fn(m) if isinstance(m, ToolMessage) else m for m in result.update["messages"]]
        return Command(graph=result.graph, update={**result.update, "messages": msgs}, resume=result.resume, goto=result.goto)
    return result


def ai_response(result: Any) -> AIMessage | None:
    """The AIMessage inside a model-call result (ModelResponse, AIMessage or extended)."""
    if isinstance(result, AIMessage):
        return result
    inner = getattr(result, "model_response", result)
    for m in reversed(getattr(inner, "result", []) or []):
        if isinstance(m, AIMessage):
            return m
    return None
