"""A per-run token cap.

Before each model call the tokens this run has used (AI messages stamped with its run id
by the token-usage middleware, plus its subagents' usage from the delegation ledger) are summed; at or above the budget the model is not called:
the reply is an assistant message saying so (no tool calls, so the run ends) and
``stop_reason = token_budget_exhausted``. The budget is ``token_budget`` from the run
context/configurable, else the constructor default; none means unlimited.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage
from langgraph.types import Command

from harness.agents.markers import run_value
from harness.agents.middlewares._base import current_run_messages
from harness.agents.middlewares.token_usage import RUN_ID_KEY


def run_tokens(messages: list[Any], run_id: str | None) -> int:
    if run_id:
        # A run's replies come after every earlier run's (runs append), so the walk back from
        # the end stops at the first reply another run stamped: it is checked on every model
        # call, and a long thread's older turns are none of this run's business.
        scope = []
        for m in reversed(messages):
            if isinstance(m, AIMessage):
                stamp = m.response_metadata.get(RUN_ID_KEY)
                if stamp == run_id:
                    scope.append(m)
                elif stamp:
                    break
    else:
        scope = [m for m in current_run_messages(messages) if isinstance(m, AIMessage)]
    return sum(int((m.usage_metadata or {}).get("total_tokens") or 0) for m in scope)


def delegated_tokens(state: Any, run_id: str | None) -> int:
    """Tokens this run's subagents used (their ``delegations`` entries): a run's budget covers
    the work it delegated too."""
    if not run_id:
        return 0
    return sum(int((d.get("usage") or {}).get("total_tokens") or 0) for d in (state or {}).get("delegations") or [] if d.get("run_id") == run_id)


class TokenBudgetMiddleware(AgentMiddleware):
    def __init__(self, default_budget: int | None = None) -> None:
        super().__init__()
        self.default_budget = default_budget

    def _exhausted(self, request: Any) -> Any:
        budget = run_value(request.runtime, "token_budget", self.default_budget)
        if not budget:
            return None
        run_id = str(run_value(request.runtime, "run_id", "") or "") or None
        used = run_tokens((request.state or {}).get("messages") or [], run_id) + delegated_tokens(request.state, run_id)
        if used < int(budget):
            return None
        note = AIMessage(id=f"deerflow-budget-{uuid.uuid4().hex}",
                         content=f"I stopped here because this run used its token budget ({used} of {int(budget)} tokens). "
                                 "Ask me to continue if you want me to go on.")
        return ExtendedModelResponse(model_response=ModelResponse(result=[note]), command=Command(update={"stop_reason": "token_budget_exhausted"}))

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._exhausted(request) or handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._exhausted(request) or await handler(request)
