"""Stop a model that keeps making the same tool call.

Within one run, when the same call (tool name and arguments) has been made
``warn_after`` times, the next request carries a hidden warning; at ``stop_after`` the
model is called once more without tools and told to give its final answer, and
``stop_reason`` becomes ``loop_capped``. Any tool calls in that last reply are dropped.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage
from langgraph.types import Command

from harness.agents.markers import context_block, hidden_message
from harness.agents.middlewares._base import ai_response, current_run_messages


def signature(call: dict[str, Any]) -> str:
    return f"{call.get('name')}:{json.dumps(call.get('args') or {}, sort_keys=True, default=str)}"


def repeated_call(messages: list[Any]) -> tuple[str, int] | None:
    """The most repeated identical call in this run and its count."""
    counts: Counter[str] = Counter()
    for m in current_run_messages(messages):
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                counts[signature(call)] += 1
    return counts.most_common(1)[0] if counts else None


class LoopDetectionMiddleware(AgentMiddleware):
    def __init__(self, warn_after: int = 3, stop_after: int = 5) -> None:
        super().__init__()
        self.warn_after = warn_after
        self.stop_after = max(stop_after, warn_after)

    def _plan(self, request: Any) -> tuple[Any, bool]:
        found = repeated_call(request.messages)
        if not found or found[1] < self.warn_after:
            return request, False
        name = found[0].split(":", 1)[0]
        if found[1] >= self.stop_after:
            note = context_block("loop", f"You have called `{name}` with the same arguments {found[1]} times without progress. "
                                         "Tools are now disabled. Give the user your final answer with what you have, and say what did not work.")
            return request.override(tools=[], messages=[*request.messages, hidden_message("loop_stop", note)]), True
        note = context_block("loop", f"Warning: you have called `{name}` with the same arguments {found[1]} times. "
                                     "Repeating it will not give a different result; change your approach or answer now.")
        return request.override(messages=[*request.messages, hidden_message("loop_warning", note)]), False

    @staticmethod
    def _finish(result: Any) -> Any:
        ai = ai_response(result)
        if ai is not None and ai.tool_calls:
            ai.tool_calls = []
            ai.additional_kwargs.pop("tool_calls", None)
        if ai is not None and not ai.text.strip():
            ai.content = "I stopped because I kept repeating the same action without making progress."
        response = result if isinstance(result, ModelResponse) else ModelResponse(result=[ai] if ai else [])
        return ExtendedModelResponse(model_response=response, command=Command(update={"stop_reason": "loop_capped"}))

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        request, stop = self._plan(request)
        result = handler(request)
        return self._finish(result) if stop else result

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        request, stop = self._plan(request)
        result = await handler(request)
        return self._finish(result) if stop else result
