"""Budget windows on the database: UTC day and month boundaries, cost from per-model usage,
the default row versus a user's own, and the one-query admission."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import User
from apps.governance.budgets import budget_window, invalidate_budget_cache, period_starts
from apps.governance.models import Budget
from apps.runs.models import Run
from apps.threads.models import Thread

pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]

NOW = datetime(2026, 3, 1, 0, 30, tzinfo=UTC)  # just after a day *and* a month boundary


@pytest.fixture(autouse=True)
def _fresh_cache():
    invalidate_budget_cache()
    yield
    invalidate_budget_cache()


def run_at(user, when, tokens, by_model=None):
    thread = Thread.objects.create(owner=user)
    run = Run.objects.create(thread=thread, owner=user, status="success", input_tokens=tokens - tokens // 4, output_tokens=tokens // 4,
                             token_usage={"by_model": by_model or {}})
    Run.objects.filter(pk=run.pk).update(created_at=when)


def test_periods_reset_at_utc_midnight_and_the_first_of_the_month():
    day, next_day, month, next_month = period_starts(NOW)
    assert (day, next_day) == (datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC))
    assert (month, next_month) == (datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC))
    user = User.objects.create_user(username="b1")
    Budget.objects.create(user=user, daily_tokens=1000, monthly_tokens=5000)
    run_at(user, datetime(2026, 2, 28, 23, 59, tzinfo=UTC), 4000)  # yesterday, and last month
    run_at(user, datetime(2026, 3, 1, 0, 10, tzinfo=UTC), 400)
    window = budget_window(user_id=user.pk, now=NOW)
    caps = {(c.period, c.kind): c for c in window.caps}
    assert caps[("day", "tokens")].used == 400 and caps[("month", "tokens")].used == 400
    assert caps[("day", "tokens")].resets_at == "2026-03-02T00:00:00Z" and caps[("month", "tokens")].resets_at == "2026-04-01T00:00:00Z"
    assert window.first_reached() is None
    # a day later in the same month the day resets and the month keeps counting
    later = budget_window(user_id=user.pk, now=datetime(2026, 3, 2, 1, tzinfo=UTC))
    assert {c.period: c.used for c in later.caps} == {"day": 0, "month": 400}


def test_the_default_applies_until_a_user_has_their_own(settings):
    user = User.objects.create_user(username="b2")
    assert budget_window(user_id=user.pk, now=NOW) is None  # no budgets at all: unlimited
    invalidate_budget_cache()
    Budget.objects.create(user=None, daily_tokens=10)
    run_at(user, NOW, 20)
    assert budget_window(user_id=user.pk, now=NOW).first_reached().describe().startswith("the daily token budget is used up (20 of 10")
    Budget.objects.create(user=user, monthly_tokens=100)  # replaces the default entirely
    window = budget_window(user_id=user.pk, now=NOW)
    assert [(c.period, c.kind) for c in window.caps] == [("month", "tokens")] and window.first_reached() is None


def test_cost_caps_price_each_model_with_the_configured_pricing(tmp_path, monkeypatch):
    from harness.config.loader import reset_config_cache

    config = tmp_path / "config.yaml"
    config.write_text("config_version: 1\nmodels:\n  - name: priced\n    use: langchain_openai:ChatOpenAI\n    model: m\n    api_key: k\n"
                      "    pricing: {currency: USD, input_per_million: 2, output_per_million: 10}\n")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(config))
    reset_config_cache()
    user = User.objects.create_user(username="b3")
    Budget.objects.create(user=user, daily_cost=Decimal("0.01"))
    run_at(user, NOW, 1000, by_model={"priced": {"input_tokens": 1_000, "output_tokens": 1_000}, "unpriced": {"input_tokens": 5}})
    (cap,) = budget_window(user_id=user.pk, now=NOW).caps
    assert cap.used == Decimal("0.012") and cap.reached()
    reset_config_cache()


def test_admission_is_one_aggregate_query_after_the_budget_row_is_cached():
    user = User.objects.create_user(username="b4")
    Budget.objects.create(user=user, daily_tokens=10, monthly_tokens=100)
    budget_window(user_id=user.pk, now=NOW)
    with CaptureQueriesContext(connection) as queries:
        budget_window(user_id=user.pk, now=NOW)
    assert len(queries) == 1 and "SUM" in queries[0]["sql"].upper()


def test_negative_caps_are_refused_by_the_database():
    with pytest.raises(IntegrityError):
        Budget.objects.create(user=None, daily_tokens=-1)


def test_only_one_default_row():
    Budget.objects.create(user=None, daily_tokens=1)
    with pytest.raises(IntegrityError):
        Budget.objects.create(user=None, daily_tokens=2)


def test_the_admin_form_refuses_a_negative_cap_without_an_error_page(admin_client):
    user = User.objects.create_user(username="b5")
    response = admin_client.post("/admin/governance/budget/add/", {"user": user.pk, "daily_tokens": "-3", "currency": "USD"})
    assert response.status_code == 200  # the form again, with the error; no 500
    assert "Budget caps must be zero or more." in response.content.decode()
    assert not Budget.objects.filter(user=user).exists()
    ok = admin_client.post("/admin/governance/budget/add/", {"user": user.pk, "daily_tokens": "300", "currency": "USD"})
    assert ok.status_code == 302 and Budget.objects.get(user=user).daily_tokens == 300
