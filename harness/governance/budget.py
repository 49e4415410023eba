"""Per-user usage budgets: the window a run is held to, and the check before each model call.

The apps compute a user's :class:`BudgetWindow` (caps, what the period has used, when each
resets) through the :class:`BudgetStore` port. Admission refuses a run whose user is at a
cap already (HTTP 429). During a run, :class:`BudgetMiddleware` loads the window once, at
the first model call, then adds what this run has used so far (its own model calls and
its subagents', from the messages and the delegation ledger) before every further call: at
a cap the model is not called, the reply says which cap and when it resets, and the run
ends with ``stop_reason = budget_exhausted``. Concurrent runs of one user each see the
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
from harness.agents.middlewares.token_usage import MODEL_KEY, RUN_ID_KEY, usage_counts
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


def run_usage(state: Any, run_id: str | None) -> tuple[int, dict[str, dict[str, int]]]:
    """(total tokens, per-model usage) of this run so far, subagents included."""
    by_model: dict[str, dict[str, int]] = {}
    total = 0

    def add(model: str, usage: dict) -> None:
        nonlocal total
        counts = usage_counts(usage)
        entry = by_model.setdefault(model or "unknown", {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0})
        entry["input_tokens"] += counts["input_tokens"]
        entry["output_tokens"] += counts["output_tokens"]
        entry["cache_read_tokens"] += counts["cache_read"]
        total += counts["total_tokens"]

    for m in (state or {}).get("messages") or []:
        if isinstance(m, AIMessage) and m.usage_metadata and run_id and m.response_metadata.get(RUN_ID_KEY) == run_id:
            add(str(m.response_metadata.get(MODEL_KEY) or ""), dict(m.usage_metadata))
    for d in (state or {}).get("delegations") or []:
        if run_id and d.get("run_id") == run_id and d.get("usage"):
            u = d["usage"]
            add(str(d.get("model_name") or ""), {"input_tokens": u.get("input_tokens"), "output_tokens": u.get("output_tokens"),
                                                 "total_tokens": u.get("total_tokens"), "input_token_details": {"cache_read": u.get("cache_read")}})
    return total, by_model


class BudgetMiddleware(AgentMiddleware):
    def __init__(self) -> None:
        super().__init__()
        self._windows: OrderedDict[str, BudgetWindow | None] = OrderedDict()
        self._lock = threading.Lock()

    def _remember(self, run_id: str, window: BudgetWindow | None) -> BudgetWindow | None:
        with self._lock:
            self._windows[run_id] = window
            while len(self._windows) > _CACHE:
                self._windows.popitem(last=False)
        return window

    def _cached(self, run_id: str) -> tuple[bool, BudgetWindow | None]:
        with self._lock:
            if run_id in self._windows:
                return True, self._windows[run_id]
        return False, None

    def _stop(self, request: Any, window: BudgetWindow | None, run_id: str) -> Any:
        if window is None or not window.caps:
            return None
        tokens, by_model = run_usage(request.state, run_id)
        cost = Decimal(0)
        if any(c.kind == "cost" for c in window.caps) and by_model:
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

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        run_id = str(run_value(request.runtime, "run_id", "") or "")
        known, window = self._cached(run_id)
        if not known:
            window = self._remember(run_id, get_budget_store().window(str(run_value(request.runtime, "user_id", "") or "")))
        return self._stop(request, window, run_id) or handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        run_id = str(run_value(request.runtime, "run_id", "") or "")
        known, window = self._cached(run_id)
        if not known:
            user_id = str(run_value(request.runtime, "user_id", "") or "")
            window = self._remember(run_id, await asyncio.to_thread(get_budget_store().window, user_id))
        return self._stop(request, window, run_id) or await handler(request)


def budget_middleware(budgets: Any) -> BudgetMiddleware | None:
    return BudgetMiddleware() if budgets is not None and budgets.enabled else None
