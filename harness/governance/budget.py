"""Per-user usage budgets: the window a run is held to, and the check before each model call.

The apps compute a user's :class:`BudgetWindow` (caps, what the period has used, when each
resets) through the :class:`BudgetStore` port. Admission refuses a run whose user is at a
cap already (HTTP 429). During a run, :class:`BudgetMiddleware` loads the window once, at
the first model call, and counts every model call of the run as it returns: the lead's and
its subagents' (the subagents' chains carry the middleware too, and all share the run's
tally). Before each call, lead or subagent, it checks the window plus the tally: at a cap
the model is not called, the reply says which cap and when it resets, and the lead's run
ends with ``stop_reason = budget_exhausted`` (a subagent stops with that note as its answer). Concurrent runs of one user each see the
usage finished before they started, so together they can overshoot a cap by what they use
in flight; the next admission then refuses.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Protocol

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage
from langgraph.types import Command

from harness.agents.markers import run_value
from harness.agents.middlewares._base import ai_response
from harness.agents.middlewares.token_usage import usage_counts
from harness.usage.pricing import usage_cost

STOP_REASON = "budget_exhausted"
_CACHE = 256


@dataclass(frozen=True)
class Cap:
    period: str  # day | month
    kind: str  # tokens | cost
    limit: Decimal
    used: Decimal
    resets_at: str  # ISO 8601, UTC

    @property
    def fraction(self) -> float:
        return float(self.used / self.limit) if self.limit > 0 else 1.0

    def reached(self, extra: Decimal = Decimal(0)) -> bool:
        return self.used + extra >= self.limit

    def describe(self, extra: Decimal = Decimal(0)) -> str:
        label = "daily" if self.period == "day" else "monthly"
        used = self.used + extra
        amount = f"{int(used):,} of {int(self.limit):,} tokens" if self.kind == "tokens" else f"{used:.4f} of {self.limit:.4f}"
        return f"the {label} {'token' if self.kind == 'tokens' else 'cost'} budget is used up ({amount}); it resets at {self.resets_at}"

    def as_dict(self) -> dict[str, Any]:
        as_num = int if self.kind == "tokens" else float
        return {"period": self.period, "kind": self.kind, "limit": as_num(self.limit), "used": as_num(self.used),
                "fraction": round(self.fraction, 4), "resets_at": self.resets_at}


@dataclass(frozen=True)
class BudgetWindow:
    caps: tuple[Cap, ...] = ()
    currency: str = "USD"
    prices: Mapping[str, Any] = field(default_factory=dict)

    def first_reached(self, tokens: int = 0, cost: Decimal = Decimal(0)) -> Cap | None:
        for cap in self.caps:
            if cap.reached(Decimal(tokens) if cap.kind == "tokens" else cost):
                return cap
        return None

    def with_used(self, tokens: int, cost: Decimal) -> BudgetWindow:
        return replace(self, caps=tuple(replace(c, used=c.used + (Decimal(tokens) if c.kind == "tokens" else cost)) for c in self.caps))


class BudgetStore(Protocol):
    def window(self, user_id: str) -> BudgetWindow | None:
        """The user's caps with what the current periods have used; None when unlimited."""


class NoBudgets:
    def window(self, user_id: str) -> BudgetWindow | None:
        return None


_store: BudgetStore = NoBudgets()


def set_budget_store(store: BudgetStore) -> None:
    global _store
    _store = store


def get_budget_store() -> BudgetStore:
    return _store


@dataclass
class _RunSpend:
    """What one run has used so far in this process: the lead's model calls and every
    subagent's (they share it through the run id), and the window read at its first call."""

    window: BudgetWindow | None = None
    loaded: bool = False
    tokens: int = 0
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)


# Per run, shared by every BudgetMiddleware instance of the process (lead and subagents).
_runs: OrderedDict[str, _RunSpend] = OrderedDict()
_runs_lock = threading.Lock()


def _spend(run_id: str) -> _RunSpend:
    with _runs_lock:
        entry = _runs.get(run_id)
        if entry is None:
            entry = _runs[run_id] = _RunSpend()
            while len(_runs) > _CACHE:
                _runs.popitem(last=False)
        return entry


def _model_name(request: Any) -> str:
    model = getattr(request, "model", None)
    return str((getattr(model, "metadata", None) or {}).get("deerflow_model_name") or getattr(model, "model_name", "") or "unknown")


def _add_usage(entry: _RunSpend, model: str, usage: dict | None) -> None:
    if not usage:
        return
    counts = usage_counts(usage)
    with _runs_lock:
        slot = entry.by_model.setdefault(model, {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0})
        slot["input_tokens"] += counts["input_tokens"]
        slot["output_tokens"] += counts["output_tokens"]
        slot["cache_read_tokens"] += counts["cache_read"]
        entry.tokens += counts["total_tokens"]


class BudgetMiddleware(AgentMiddleware):
    def _stop(self, entry: _RunSpend) -> Any:
        window = entry.window
        if window is None or not window.caps:
            return None
        with _runs_lock:
            tokens, by_model = entry.tokens, {k: dict(v) for k, v in entry.by_model.items()}
        cost = Decimal(0)
        if by_model and any(c.kind == "cost" for c in window.caps):
            priced = usage_cost(by_model, window.prices)
            cost = priced.amount if priced.amount is not None and priced.currency in (None, window.currency) else Decimal(0)
        cap = window.first_reached(tokens, cost)
        if cap is None:
            return None
        extra = Decimal(tokens) if cap.kind == "tokens" else cost
        note = AIMessage(id=f"deerflow-budget-{uuid.uuid4().hex}",
                         content=f"I stopped here because {cap.describe(extra)}. Ask an administrator to raise it, or continue after the reset.",
                         additional_kwargs={"deerflow_budget": cap.as_dict()})
        return ExtendedModelResponse(model_response=ModelResponse(result=[note]), command=Command(update={"stop_reason": STOP_REASON}))

    def _record(self, request: Any, entry: _RunSpend, result: Any) -> Any:
        ai = ai_response(result)
        if ai is not None:
            _add_usage(entry, _model_name(request), ai.usage_metadata)
        return result

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        entry = _spend(str(run_value(request.runtime, "run_id", "") or ""))
        if not entry.loaded:
            entry.window, entry.loaded = get_budget_store().window(str(run_value(request.runtime, "user_id", "") or "")), True
        return self._stop(entry) or self._record(request, entry, handler(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        entry = _spend(str(run_value(request.runtime, "run_id", "") or ""))
        if not entry.loaded:
            user_id = str(run_value(request.runtime, "user_id", "") or "")
            entry.window, entry.loaded = await asyncio.to_thread(get_budget_store().window, user_id), True
        return self._stop(entry) or self._record(request, entry, await handler(request))


def budget_middleware(budgets: Any) -> BudgetMiddleware | None:
    return BudgetMiddleware() if budgets is not None and budgets.enabled else None
