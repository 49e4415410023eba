"""An empty final answer is retried once, then reported as an error.

Some providers return an empty message after tool use. The user would see nothing and
the run would look successful, so the model is asked once more (with a hidden nudge);
a second empty reply becomes a visible assistant message marked as an error fallback.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langgraph.types import Command

from harness.agents.markers import context_block, error_fallback, hidden_message, is_error_fallback
from harness.agents.middlewares._base import ai_response

NUDGE = context_block("recovery", "Your previous reply was empty. Answer the user now: summarize what you did and the result.")


def is_empty(result: Any) -> bool:
    ai = ai_response(result)
    return ai is not None and not ai.tool_calls and not ai.invalid_tool_calls and not ai.text.strip() and not is_error_fallback(ai)


class TerminalResponseMiddleware(AgentMiddleware):
    @staticmethod
    def _give_up(result: Any) -> Any:
        ai = ai_response(result)
        msg = error_fallback("The model returned an empty answer twice, so this turn ended without a reply. Please try again.",
                             error_type="empty_response")
        if ai is not None and ai.id:
            msg.id = ai.id
        if ai is not None:
            msg.usage_metadata = ai.usage_metadata
            msg.response_metadata = dict(ai.response_metadata)
        return ExtendedModelResponse(model_response=ModelResponse(result=[msg]), command=Command(update={"stop_reason": "error_fallback"}))

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        result = handler(request)
        if not is_empty(result):
            return result
        result = handler(request.override(messages=[*request.messages, hidden_message("recovery", NUDGE)]))
        return self._give_up(result) if is_empty(result) else result

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        result = await handler(request)
        if not is_empty(result):
            return result
        result = await handler(request.override(messages=[*request.messages, hidden_message("recovery", NUDGE)]))
        return self._give_up(result) if is_empty(result) else result
