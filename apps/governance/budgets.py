"""Budget windows: a user's caps and what the current UTC day and month have used.

Usage is what the user's runs recorded (``Run`` tokens and per-model usage; subagents are
included there). Budgets are only consulted when ``budgets.enabled`` is set
in ``config.yaml``; a user's budget row (or the default) is cached per process for
``CACHE_SECONDS`` and dropped on every save in this process.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import Q

from apps.governance.models import Budget
from apps.runs.selectors import owner_run_usage, owner_token_totals
from harness.config.loader import get_app_config
from harness.governance.budget import BudgetWindow, Cap
from harness.usage.pricing import usage_cost

CACHE_SECONDS = 30
_cache: dict[int, tuple[float, dict | None]] = {}
_lock = threading.Lock()


def invalidate_budget_cache() -> None:
    with _lock:
        _cache.clear()


def _caps_for(user_id: int) -> dict | None:
    now = time.monotonic()
    with _lock:
        hit = _cache.get(user_id)
        if hit and now - hit[0] < CACHE_SECONDS:
            return hit[1]
    # One query for the user's row or the default; the user's row sorts first.
    row = (Budget.objects.filter(Q(user_id=user_id) | Q(is_default=True)).order_by("is_default")
           .values("daily_tokens", "monthly_tokens", "daily_cost", "monthly_cost", "currency").first())
    if row is not None and all(row[f] is None for f in Budget.CAP_FIELDS):
        row = None
    with _lock:
        _cache[user_id] = (now, row)
    return row


def period_starts(now: datetime) -> tuple[datetime, datetime, datetime, datetime]:
    """(day start, next day, month start, next month), UTC."""
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    month = day.replace(day=1)
    next_month = (month + timedelta(days=32)).replace(day=1)
    return day, day + timedelta(days=1), month, next_month


def _iso(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def budget_window(*, user_id: int, now: datetime | None = None) -> BudgetWindow | None:
    caps = _caps_for(int(user_id))
    if caps is None:
        return None
    now = now or datetime.now(UTC)
    day, next_day, month, next_month = period_starts(now)
    app = get_app_config()
    prices = {m.name: m.pricing for m in app.models}
    wants_cost = caps["daily_cost"] is not None or caps["monthly_cost"] is not None
    used = {"day_tokens": 0, "month_tokens": 0, "day_cost": Decimal(0), "month_cost": Decimal(0)}
    if wants_cost:
        # Cost needs each run's per-model usage: one indexed read of the month's runs.
        for created, usage, total in owner_run_usage(owner_id=user_id, since=month):
            cost = usage_cost((usage or {}).get("by_model") or {}, prices)
            amount = cost.amount if cost.amount is not None and cost.currency == caps["currency"] else Decimal(0)
            used["month_tokens"] += total or 0
            used["month_cost"] += amount
            if created >= day:
                used["day_tokens"] += total or 0
                used["day_cost"] += amount
    else:
        used["month_tokens"], used["day_tokens"] = owner_token_totals(owner_id=user_id, since=month, day=day)
    out = []
    for period, reset in (("day", next_day), ("month", next_month)):
        for kind in ("tokens", "cost"):
            limit = caps[f"{'daily' if period == 'day' else 'monthly'}_{kind}"]
            if limit is not None:
                out.append(Cap(period=period, kind=kind, limit=Decimal(limit), used=Decimal(used[f"{period}_{kind}"]), resets_at=_iso(reset)))
    return BudgetWindow(caps=tuple(out), currency=caps["currency"], prices=prices)
