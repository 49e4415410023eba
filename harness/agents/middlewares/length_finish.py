"""Record when a final answer was cut off by the output token limit.

The text is kept as the model produced it; ``stop_reason = model_length_capped`` lets the
run record and UI say the answer is incomplete. Replies with tool calls are left alone
(the dangling-tool-call layer refuses their truncated arguments).

This layer also clears a ``stop_reason`` left by an earlier run. Every stop reason ends
the run that set it, so any value present at a model call is stale; outer layers that
set a reason in the same call (budget, loop, error fallback) apply their update after
this one and win. Doing it inside the model call instead of in before/after hooks saves
two graph steps per run.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage
from langgraph.types import Command

from harness.agents.middlewares._base import ai_response

LENGTH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "model_length"})


def length_capped(message: Any) -> bool:
    if not isinstance(message, AIMessage) or message.tool_calls or message.invalid_tool_calls:
        return False
    meta = message.response_metadata or {}
    return meta.get("finish_reason") in LENGTH_REASONS or meta.get("stop_reason") in LENGTH_REASONS


class LengthFinishReasonMiddleware(AgentMiddleware):
    @staticmethod
    def _record(request: Any, result: Any) -> Any:
        if length_capped(ai_response(result)):
            return ExtendedModelResponse(model_response=result, command=Command(update={"stop_reason": "model_length_capped"}))
        if (request.state or {}).get("stop_reason"):
            return ExtendedModelResponse(model_response=result, command=Command(update={"stop_reason": None}))
        return result

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._record(request, handler(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._record(request, await handler(request))
