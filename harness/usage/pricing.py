"""Cost of recorded token usage, from ``models[].pricing``.

Cache reads are billed at ``input_cache_hit_per_million`` when the model gives one and at
the input price otherwise; they are part of ``input_tokens`` (as LangChain reports them),
so only the uncached rest is billed at the input price. A model without pricing costs
``None``: the console shows "unpriced", never a guessed figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Cost:
    amount: Decimal | None
    currency: str | None
    unpriced_models: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"amount": None if self.amount is None else float(round(self.amount, 6)),
                "currency": self.currency, "unpriced_models": list(self.unpriced_models)}


def _price(pricing: Any, name: str) -> Decimal | None:
    value = pricing.get(name) if isinstance(pricing, Mapping) else getattr(pricing, name, None)
    return None if value is None else Decimal(str(value))


def model_cost(usage: Mapping[str, Any], pricing: Any) -> Decimal | None:
    """Cost of one model's usage entry ``{input_tokens, output_tokens, cache_read_tokens}``."""
    if pricing is None:
        return None
    inp = int(usage.get("input_tokens") or 0)
    out = int(usage.get("output_tokens") or 0)
    cached = min(int(usage.get("cache_read_tokens") or usage.get("cache_read") or 0), inp)
    input_price = _price(pricing, "input_per_million") or Decimal(0)
    cache_price = _price(pricing, "input_cache_hit_per_million")
    if cache_price is None:
        cache_price = input_price
    output_price = _price(pricing, "output_per_million") or Decimal(0)
    return ((inp - cached) * input_price + cached * cache_price + out * output_price) / MILLION


def usage_cost(by_model: Mapping[str, Mapping[str, Any]], prices: Mapping[str, Any]) -> Cost:
    """Cost of a run's (or a period's) per-model usage. ``prices`` maps model name to its
    pricing (or None). Models in different currencies are not summed: the amount is None
    and every model is reported unpriced, rather than adding dollars to yuan."""
    total = Decimal(0)
    currency: str | None = None
    unpriced: list[str] = []
    priced_any = False
    for model, usage in by_model.items():
        pricing = prices.get(model)
        cost = model_cost(usage, pricing)
        if cost is None:
            unpriced.append(model)
            continue
        model_currency = (pricing.get("currency") if isinstance(pricing, Mapping) else getattr(pricing, "currency", None)) or "USD"
        if currency is not None and model_currency != currency:
            return Cost(None, None, tuple(sorted(by_model)))
        currency = model_currency
        total += cost
        priced_any = True
    if not priced_any:
        return Cost(None, None, tuple(sorted(unpriced)))
    return Cost(total, currency, tuple(sorted(unpriced)))
