"""A per-run token cap.

Before each model call the tokens this run has used (AI messages stamped with its run id
by the token-usage middleware, with the usage of the subagents each dispatched: merged into
that message one reply later, see harness/subagents/limits.py, and read from the task's
result until then) are summed; at or above the budget the model is not called:
the reply is an assistant message saying so (no tool calls, so the run ends) and
``stop_reason = token_budget_exhausted``. The budget is ``token_budget`` from the run
context/configurable, else ``token_budget.max_tokens`` of config.yaml when
``token_budget.enabled`` (DeerFlow's section: separate input/output caps, a warning at
``warn_threshold``, the stop at ``hard_stop_threshold``); none means unlimited. This is a
per-run guard, unrelated to ``budgets:`` (a user's daily/monthly spending, governance).
Replies a summary removed during the run are added from ``summarized_usage`` in state, so
summarization does not reset the count.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from harness.agents.markers import SUBAGENT_USAGE_MERGED_KEY, context_block, guard_key, hidden_message, run_value
from harness.agents.middlewares._base import ai_response, current_run_messages
from harness.agents.middlewares.token_usage import RUN_ID_KEY


_FIELDS = ("input_tokens", "output_tokens", "total_tokens")


def _run_replies(messages: list[Any], run_id: str | None) -> tuple[list[AIMessage], list[dict[str, Any]]]:
    """This run's replies, newest first, and the usage of its subagents not yet merged into
    the reply that dispatched them (harness/subagents/limits.py merges it one reply later)."""
    if not run_id:
        scope = current_run_messages(messages)
        return [m for m in reversed(scope) if isinstance(m, AIMessage)], [u for m in scope if (u := _pending_task_usage(m))]
    # A run's replies come after every earlier run's (runs append), so the walk back from
    # the end stops at the first reply another run stamped: it is checked on every model
    # call, and a long thread's older turns are none of this run's business. Task results
    # count once a reply of this run is found before them: one before another run's reply is
    # that run's.
    replies, pending, held = [], [], []
    for m in reversed(messages):
        if isinstance(m, AIMessage):
            stamp = m.response_metadata.get(RUN_ID_KEY)
            if stamp == run_id:
                replies.append(m)
                pending += held
                held = []
            elif stamp:
                break
        elif usage := _pending_task_usage(m):
            held.append(usage)
    return replies, pending


def _pending_task_usage(m: Any) -> dict[str, Any] | None:
    if not isinstance(m, ToolMessage) or m.name != "task" or m.additional_kwargs.get(SUBAGENT_USAGE_MERGED_KEY):
        return None
    return m.additional_kwargs.get("subagent_usage") or None


def _usage(m: AIMessage | dict[str, Any]) -> tuple[int, int, int]:
    u = (m.usage_metadata or {}) if isinstance(m, AIMessage) else m
    return tuple(int(u.get(k) or 0) for k in _FIELDS)  # type: ignore[return-value]


def run_usage(messages: list[Any], run_id: str | None) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(input, output, total) this run has used, subagents included, and the same for its
    newest reply alone."""
    replies, pending = _run_replies(messages, run_id)
    sums = [0, 0, 0]
    for m in [*replies, *pending]:
        for i, v in enumerate(_usage(m)):
            sums[i] += v
    return (sums[0], sums[1], sums[2]), (_usage(replies[0]) if replies else (0, 0, 0))


def run_tokens(messages: list[Any], run_id: str | None) -> int:
    return run_usage(messages, run_id)[0][2]


class TokenBudgetMiddleware(AgentMiddleware):
    """``default_budget`` caps total tokens (the run option ``token_budget`` overrides it);
    ``max_input_tokens``/``max_output_tokens`` cap those alone. The highest fraction of any
    cap decides: at ``warn_threshold`` the next request carries a hidden warning (once: when
    the newest reply crossed it), at ``hard_stop_threshold`` the model is not called."""

    def __init__(self, default_budget: int | None = None, *, max_input_tokens: int | None = None, max_output_tokens: int | None = None,
                 warn_threshold: float = 0.8, hard_stop_threshold: float = 1.0) -> None:
        super().__init__()
        self.default_budget = default_budget
        self.max_input_tokens = max_input_tokens
        self.max_output_tokens = max_output_tokens
        self.warn_threshold = warn_threshold
        self.hard_stop_threshold = hard_stop_threshold

    @classmethod
    def from_config(cls, cfg: Any) -> TokenBudgetMiddleware:
        if not cfg.enabled:
            return cls()
        return cls(cfg.max_tokens, max_input_tokens=cfg.max_input_tokens, max_output_tokens=cfg.max_output_tokens,
                   warn_threshold=cfg.warn_threshold, hard_stop_threshold=cfg.hard_stop_threshold)

    def _budget(self, request: Any) -> Any:
        return run_value(request.runtime, "token_budget", self.default_budget)

    def _spent(self, request: Any) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        run_id = str(run_value(request.runtime, "run_id", "") or "") or None
        state = request.state or {}
        present, last = run_usage(state.get("messages") or [], run_id)
        # Replies a summary removed mid-run still count (harness/agents/middlewares/summarization.py).
        removed = (state.get("summarized_usage") or {}).get(run_id or "") or (0, 0, 0)
        return tuple(a + int(b or 0) for a, b in zip(present, removed, strict=False)), last  # type: ignore[return-value]

    def _check(self, request: Any) -> tuple[Any, Any]:
        """(request to send, or None) and the reply that replaces the call, if the budget is spent."""
        budget = self._budget(request)
        if not (budget or self.max_input_tokens or self.max_output_tokens):
            return request, None
        (used_in, used_out, used), last = self._spent(request)
        limits = [("total", used, last[2], int(budget) if budget else 0), ("input", used_in, last[0], self.max_input_tokens or 0),
                  ("output", used_out, last[1], self.max_output_tokens or 0)]
        kind, spent, newest, cap = max((x for x in limits if x[3]), key=lambda x: x[1] / x[3])
        fraction = spent / cap
        if not spent:  # nothing used yet: even a 0.0 threshold waits for the first reply
            return request, None
        if fraction >= self.hard_stop_threshold:
            note = AIMessage(id=f"deerflow-budget-{uuid.uuid4().hex}",
                             content=f"I stopped here because this run used its token budget ({spent} of {cap} {'' if kind == 'total' else kind + ' '}tokens). "
                                     "Ask me to continue if you want me to go on.")
            return None, ExtendedModelResponse(model_response=ModelResponse(result=[note]),
                                               command=Command(update={"stop_reason": "token_budget_exhausted"}))
        if fraction >= self.warn_threshold and (spent - newest) / cap < self.warn_threshold:
            warning = context_block("budget", f"You have used {spent} of this run's {cap} {kind} token budget ({fraction:.0%}). "
                                              "Wrap up and give your final answer; avoid new tool calls unless they are really needed.")
            return request.override(messages=[*request.messages, hidden_message("budget_warning", warning)]), None
        return request, None

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        request, stopped = self._check(request)
        return stopped or handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        request, stopped = self._check(request)
        return stopped or await handler(request)


class TaskTokenBudgetMiddleware(TokenBudgetMiddleware):
    """A subagent's budget (``subagents.token_budget``). It counts the replies it sees come
    back, per task, so a summary that drops old messages does not drop their tokens, and it
    ignores the lead run's ``token_budget`` option. The graph (and this instance) serves every
    task of its type: the counts are kept per task, the most recent ``MAX_TASKS`` of them."""

    MAX_TASKS = 256

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tasks: OrderedDict[tuple[str, str, str], tuple[tuple[int, int, int], tuple[int, int, int]]] = OrderedDict()
        self._lock = threading.Lock()

    def _budget(self, request: Any) -> Any:
        return self.default_budget

    def _spent(self, request: Any) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        with self._lock:
            return self._tasks.get(guard_key(request.runtime), ((0, 0, 0), (0, 0, 0)))

    def _count(self, request: Any, result: Any) -> Any:
        ai = ai_response(result)
        if ai is None or not ai.usage_metadata:
            return result
        last = _usage(ai)
        key = guard_key(request.runtime)
        with self._lock:
            total, _ = self._tasks.pop(key, ((0, 0, 0), (0, 0, 0)))
            self._tasks[key] = (tuple(a + b for a, b in zip(total, last, strict=True)), last)  # type: ignore[assignment]
            while len(self._tasks) > self.MAX_TASKS:
                self._tasks.popitem(last=False)
        return result

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        request, stopped = self._check(request)
        return stopped or self._count(request, handler(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        request, stopped = self._check(request)
        return stopped or self._count(request, await handler(request))
