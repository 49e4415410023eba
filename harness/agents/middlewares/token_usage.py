"""Count tokens per model, cache reads included, once per model response.

Each AI message is stamped with the run id and model name (``response_metadata``) so
per-run budgets and the run worker can attribute usage; ``token_usage`` in state sums the
counters per model over the thread. Failed attempts that were retried report no usage,
so nothing is counted twice.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse
from langgraph.types import Command

from harness.agents.markers import run_value
from harness.agents.middlewares._base import ai_response

RUN_ID_KEY = "deerflow_run_id"
MODEL_KEY = "deerflow_model"


def usage_counts(usage: dict[str, Any] | None) -> dict[str, int]:
    usage = usage or {}
    details = usage.get("input_token_details") or {}
    inp, out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return {"input_tokens": inp, "output_tokens": out, "total_tokens": int(usage.get("total_tokens") or inp + out),
            "cache_read": int(details.get("cache_read") or 0), "calls": 1}


class TokenUsageMiddleware(AgentMiddleware):
    def __init__(self, model_name: str) -> None:
        super().__init__()
        self.model_name = model_name

    def _record(self, request: Any, result: Any) -> Any:
        ai = ai_response(result)
        if ai is None:
            return result
        ai.response_metadata[RUN_ID_KEY] = str(run_value(request.runtime, "run_id", "") or "")
        ai.response_metadata[MODEL_KEY] = self.model_name
        if not ai.usage_metadata:
            return result
        command = Command(update={"token_usage": {self.model_name: usage_counts(ai.usage_metadata)}})
        if isinstance(result, ExtendedModelResponse):
            return result  # an inner layer already attached a command; usage rides on the message
        return ExtendedModelResponse(model_response=result, command=command)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._record(request, handler(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._record(request, await handler(request))
