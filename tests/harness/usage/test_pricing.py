from decimal import Decimal

from harness.config.app_config import PricingConfig
from harness.usage.pricing import model_cost, usage_cost

PRICED = PricingConfig(input_per_million=2.0, output_per_million=8.0, input_cache_hit_per_million=0.5)


def test_cache_hits_are_billed_at_their_own_price():
    usage = {"input_tokens": 1_000_000, "output_tokens": 500_000, "cache_read_tokens": 400_000}
    # 600k uncached × 2 + 400k cached × 0.5 + 500k out × 8
    assert model_cost(usage, PRICED) == Decimal("1.2") + Decimal("0.2") + Decimal("4")


def test_cache_hits_fall_back_to_the_input_price():
    pricing = PricingConfig(input_per_million=2.0, output_per_million=8.0)
    usage = {"input_tokens": 1_000_000, "output_tokens": 0, "cache_read_tokens": 400_000}
    assert model_cost(usage, pricing) == Decimal("2")


def test_unpriced_model_costs_none_and_is_named():
    cost = usage_cost({"free": {"input_tokens": 10, "output_tokens": 10}}, {"free": None})
    assert cost.amount is None and cost.unpriced_models == ("free",)


def test_mixed_models_in_one_run_sum_the_priced_and_name_the_rest():
    by_model = {"a": {"input_tokens": 1_000_000, "output_tokens": 0},
                "b": {"input_tokens": 0, "output_tokens": 1_000_000},
                "c": {"input_tokens": 5, "output_tokens": 5}}
    prices = {"a": PRICED, "b": {"input_per_million": 1, "output_per_million": 3}, "c": None}
    cost = usage_cost(by_model, prices)
    assert cost.amount == Decimal("5") and cost.currency == "USD" and cost.unpriced_models == ("c",)
    assert cost.as_dict() == {"amount": 5.0, "currency": "USD", "unpriced_models": ["c"]}


def test_currencies_are_never_added_together():
    prices = {"a": PRICED, "b": PricingConfig(currency="CNY", input_per_million=1)}
    cost = usage_cost({"a": {"input_tokens": 1}, "b": {"input_tokens": 1}}, prices)
    assert cost.amount is None and cost.unpriced_models == ("a", "b")
