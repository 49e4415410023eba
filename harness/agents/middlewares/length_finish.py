"""Record when a final answer was cut off by the output token limit.

The text is kept as the model produced it; ``stop_reason = model_length_capped`` lets the
run record and UI say the answer is incomplete. Replies with tool calls are left alone
(their truncated arguments are handled as invalid tool calls). ``stop_reason`` is reset at
the start of every run.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage

LENGTH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "model_length"})


def length_capped(message: Any) -> bool:
    if not isinstance(message, AIMessage) or message.tool_calls or message.invalid_tool_calls:
        return False
    meta = message.response_metadata or {}
    return meta.get("finish_reason") in LENGTH_REASONS or meta.get("stop_reason") in LENGTH_REASONS


class LengthFinishReasonMiddleware(AgentMiddleware):
    def before_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        return {"stop_reason": None} if state.get("stop_reason") else None

    async def abefore_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    def after_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        messages = state.get("messages") or []
        if messages and length_capped(messages[-1]):
            return {"stop_reason": "model_length_capped"}
        return None

    async def aafter_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)
