"""The Usage page (every user: their own numbers) and the Console page (staff: everyone, and
what to act on). Both are rendered on the server from the same reports the API serves, with
SVG charts, so they work without script and offline."""

from __future__ import annotations

from datetime import date

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from apps.console import operations, reports
from apps.console.charts import bar_chart
from apps.console.periods import parse_period, parse_scope
from apps.errors import DomainError
from apps.runs.selectors import run_find
from deerflow_site.errors import http_status

PAGE_PERIODS = [("today", "Today"), ("7d", "7 days"), ("30d", "30 days")]


def _day_label(iso: str, many: bool) -> str:
    day = date.fromisoformat(iso)
    return f"{day.day} {day:%b}" if many else f"{day:%a} {day.day}"


def _charts(usage: dict) -> dict:
    days = usage["days"]
    many = len(days) > 7
    tokens = [(_day_label(d["date"], many), d["tokens"]["total"]) for d in days]
    currency = usage["total"]["cost"]["currency"]
    symbol = {"USD": "$", "EUR": "€", "GBP": "£", "CNY": "¥"}.get(currency or "", "")
    cost = [(_day_label(d["date"], many), d["cost"]["amount"]) for d in days]
    return {"tokens_chart": bar_chart(tokens, label="Tokens per day"),
            "cost_chart": bar_chart(cost, label=f"Cost per day ({currency or 'unpriced'})", unit=symbol, color="#1d8a5b") if currency else None}


def _context(request, *, who: str | None):
    params = request.GET.copy()
    scope = parse_scope(request.user, who)
    period = parse_period(params)
    usage = reports.console_usage(scope=scope, period=period)
    stats = reports.console_stats(scope=scope, period=period)
    keep = {k: v for k, v in (("tz", params.get("tz")), ("user", params.get("user"))) if v}
    return scope, period, {
        "usage": usage, "stats": stats, **_charts(usage), "period": period,
        "periods": [(key, name, "?" + urlencode({**keep, "period": key})) for key, name in PAGE_PERIODS],
        "query": urlencode({**keep, "period": period.name} if period.name != "custom" else {**keep, "since": period.first_day, "until": period.last_day}),
    }


def _render_error(request, template: str, exc: DomainError):
    return render(request, template, {"error": exc.detail, "periods": [(k, n, f"?period={k}") for k, n in PAGE_PERIODS]},
                  status=http_status(exc))


@login_required
def usage_page(request):
    try:
        _, _, context = _context(request, who=None)
    except DomainError as exc:
        return _render_error(request, "console/usage.html", exc)
    context["recent_runs"] = reports.console_runs(scope=parse_scope(request.user, None), period=context["period"], limit=10)["runs"]
    return render(request, "console/usage.html", context)


@login_required
def console_page(request):
    if not request.user.is_staff:
        raise PermissionDenied("the console is for administrators")
    try:
        scope, period, context = _context(request, who=request.GET.get("user") or "all")
        feedback = operations.feedback_rows(scope=scope, period=period, rating=request.GET.get("rating"), limit=50)
    except DomainError as exc:
        return _render_error(request, "console/console.html", exc)
    context.update(
        active_runs=operations.active_runs(scope=scope), queue=operations.queue_depth(),
        failing_runs=operations.failing_runs(scope=scope, period=period), schedules=operations.schedule_health(scope=scope),
        feedback=feedback, rating=request.GET.get("rating") or "", selected_user=request.GET.get("user") or "all",
        users=list(get_user_model().objects.filter(runs__isnull=False).distinct().order_by("username").values_list("username", flat=True)[:200]),
    )
    return render(request, "console/console.html", context)


@login_required
@require_POST
def console_cancel_run(request, run_id):
    """The Console's cancel button: a plain form post, so it works without script."""
    if not request.user.is_staff:
        raise PermissionDenied("the console is for administrators")
    from apps.runs.services import run_cancel

    run = run_find(run_id=run_id)
    if run is None:
        messages.error(request, f"Run {run_id} not found")
    else:
        try:
            run = run_cancel(run=run, wait=True, timeout=10)
            messages.success(request, f"Run {run.pk} cancelled ({run.status}).")
        except DomainError as exc:
            messages.error(request, exc.detail)
    back = request.POST.get("next") or ""
    return redirect(back if back.startswith("/console/") else reverse("console"))
