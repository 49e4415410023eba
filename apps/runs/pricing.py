"""What runs cost: model prices read from ``models[].pricing`` in config.yaml, a run's usage
per model, and a cost as text. The engine's admin shows each run's cost; the console's reports
sum them.

The map is rebuilt only when the loader hands back a new config object (it re-parses on a
content change), so a report pays for one dict lookup, not a walk of the model list.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from harness.config.loader import get_app_config
from harness.usage.pricing import Cost, usage_cost

_cached: tuple[int, dict[str, Any]] | None = None


def model_prices() -> dict[str, Any]:
    """Model name → its PricingConfig (or None when the model has no pricing)."""
    global _cached
    config = get_app_config()
    if _cached is None or _cached[0] != id(config):
        _cached = (id(config), {m.name: m.pricing for m in config.models})
    return _cached[1]


def run_usage_by_model(token_usage: Mapping | None, model_name: str, input_tokens: int, output_tokens: int,
                       cache_read_tokens: int) -> dict[str, dict[str, int]]:
    """A run's per-model usage; a run recorded before per-model usage existed (or whose
    journal lost it) counts its run-level totals against the run's model."""
    by_model = (token_usage or {}).get("by_model") or {}
    if by_model:
        return {name: {"input_tokens": int(e.get("input_tokens") or 0), "output_tokens": int(e.get("output_tokens") or 0),
                       "cache_read_tokens": int(e.get("cache_read_tokens") or 0)} for name, e in by_model.items()}
    if not (input_tokens or output_tokens):
        return {}
    return {model_name or "unknown": {"input_tokens": input_tokens, "output_tokens": output_tokens, "cache_read_tokens": cache_read_tokens}}


def add_usage(into: dict[str, dict[str, int]], by_model: Mapping[str, Mapping[str, int]]) -> None:
    for name, entry in by_model.items():
        agg = into.setdefault(name, {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0})
        for key in agg:
            agg[key] += int(entry.get(key) or 0)


def cost_of(by_model: Mapping[str, Mapping[str, int]]) -> Cost:
    """Cost of usage summed over any number of runs: pricing is linear, so the sum of the
    runs' costs equals the cost of their summed usage."""
    if not by_model:
        # Nothing used costs nothing, in the one currency the config prices in (if it has one).
        currencies = {(p.currency or "USD") for p in model_prices().values() if p is not None}
        return Cost(Decimal(0), currencies.pop()) if len(currencies) == 1 else Cost(None, None)
    return usage_cost(by_model, model_prices())


def zero_cost() -> dict:
    return {"amount": None, "currency": None, "unpriced_models": []}


CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "CNY": "¥", "JPY": "¥"}


def cost_text(cost: dict) -> str:
    """A cost dict as text: "unpriced" when there is no amount, never 0 for an unknown."""
    if not cost or cost.get("amount") is None:
        return "unpriced" if cost and cost.get("unpriced_models") else "–"
    amount, currency = cost["amount"], cost.get("currency") or ""
    symbol = CURRENCY_SYMBOLS.get(currency)
    text = f"{amount:,.4f}" if 0 < amount < 0.01 else f"{amount:,.2f}"
    return f"{symbol}{text}" if symbol else f"{text} {currency}"
