"""Usage and cost reports over recorded runs: headline stats, run history, daily series.

A reporting layer: it reads runs through ``apps.runs.selectors.runs_between`` and thread
titles through ``apps.threads.selectors``, and prices them with ``apps.runs.pricing``. Nothing here runs on the run path; a server whose
users never open the console pays nothing for it.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Count, Q

from apps.console.periods import Period, Scope
from apps.errors import InvalidRequest
from apps.runs.lifecycle import ACTIVE_RUN_STATUSES, RunStatus
from apps.runs.pricing import add_usage, cost_of, run_usage_by_model
from apps.runs.selectors import runs_between
from apps.threads.selectors import thread_titles

FAILED = (RunStatus.ERROR, RunStatus.TIMEOUT)
FINISHED = (RunStatus.SUCCESS, RunStatus.ERROR, RunStatus.TIMEOUT, RunStatus.INTERRUPTED)
USAGE_FIELDS = ("model_name", "input_tokens", "output_tokens", "cache_read_tokens", "token_usage")


def _runs(scope: Scope, period: Period):
    return scope.filter(runs_between(start=period.start, end=period.end))


def _usage_of(row: dict) -> dict[str, dict[str, int]]:
    return run_usage_by_model(row["token_usage"], row["model_name"], row["input_tokens"], row["output_tokens"], row["cache_read_tokens"])


def _tokens(by_model: dict[str, dict[str, int]]) -> dict[str, int]:
    inp = sum(e["input_tokens"] for e in by_model.values())
    out = sum(e["output_tokens"] for e in by_model.values())
    return {"input": inp, "output": out, "cache_read": sum(e["cache_read_tokens"] for e in by_model.values()), "total": inp + out}


def console_stats(*, scope: Scope, period: Period) -> dict:
    runs = _runs(scope, period)
    counts = runs.aggregate(
        runs=Count("id"), threads=Count("thread_id", distinct=True), agents=Count("assistant_id", distinct=True),
        failed=Count("id", filter=Q(status__in=FAILED)), finished=Count("id", filter=Q(status__in=FINISHED)),
        active=Count("id", filter=Q(status__in=ACTIVE_RUN_STATUSES)),
    )
    by_status = dict(runs.order_by().values_list("status").annotate(n=Count("id")))
    usage: dict[str, dict[str, int]] = {}
    for row in runs.order_by().values(*USAGE_FIELDS):
        add_usage(usage, _usage_of(row))
    finished = counts["finished"]
    return {
        "period": period.as_dict(), "user": scope.label,
        "runs": counts["runs"], "threads": counts["threads"], "agents": counts["agents"], "active_runs": counts["active"],
        "runs_by_status": {s: by_status.get(s, 0) for s in RunStatus.values},
        "tokens": _tokens(usage), "cost": cost_of(usage).as_dict(),
        "error_rate": round(counts["failed"] / finished, 4) if finished else None,
    }


def _duration_ms(started: datetime | None, finished: datetime | None) -> int | None:
    if started is None or finished is None:
        return None
    return int((finished - started).total_seconds() * 1000)


def run_row(run) -> dict:
    by_model = run_usage_by_model(run.token_usage, run.model_name, run.input_tokens, run.output_tokens, run.cache_read_tokens)
    return {
        "run_id": str(run.pk), "thread_id": run.thread_id, "thread_title": run.thread.title, "user": run.owner.get_username(),
        "assistant_id": run.assistant_id, "status": run.status, "model_name": run.model_name or (next(iter(by_model), "") if len(by_model) == 1 else ""),
        "models": sorted(by_model), "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "duration_ms": _duration_ms(run.started_at, run.finished_at),
        "tokens": _tokens(by_model), "cost": cost_of(by_model).as_dict() if by_model else {"amount": None, "currency": None, "unpriced_models": []},
        "stop_reason": run.stop_reason, "error": run.error,
    }


def console_runs(*, scope: Scope, period: Period, status: str | None = None, model: str | None = None,
                 thread_id: str | None = None, limit: int = 50, offset: int = 0, max_limit: int = 500) -> dict:
    if not (isinstance(limit, int) and 1 <= limit <= max_limit):
        raise InvalidRequest(f"limit must be an integer from 1 to {max_limit}")
    if not (isinstance(offset, int) and offset >= 0):
        raise InvalidRequest("offset must be a non-negative integer")
    qs = _runs(scope, period)
    if status:
        wanted = status.split(",")
        bad = [s for s in wanted if s not in RunStatus.values]
        if bad:
            raise InvalidRequest(f"status must be one of {', '.join(RunStatus.values)}, got {', '.join(bad)!r}")
        qs = qs.filter(status__in=wanted)
    if model:
        qs = qs.filter(model_name=model)
    if thread_id:
        qs = qs.filter(thread_id=thread_id)
    total = qs.count()
    page = list(qs.select_related("thread", "owner").order_by("-created_at")[offset : offset + limit])
    return {"period": period.as_dict(), "user": scope.label, "total": total, "limit": limit, "offset": offset,
            "has_more": offset + len(page) < total, "runs": [run_row(r) for r in page]}


def console_usage(*, scope: Scope, period: Period, top: int = 10) -> dict:
    """Zero-filled daily series (local days of ``period.tz``), per-model breakdown, the most
    expensive threads and, across users, the top users."""
    days: dict = {d: {} for d in period.days()}
    day_runs: dict = defaultdict(int)
    models: dict[str, dict[str, int]] = {}
    model_runs: dict[str, int] = defaultdict(int)
    threads: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    thread_runs: dict[str, int] = defaultdict(int)
    users: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    user_runs: dict[str, int] = defaultdict(int)
    rows = _runs(scope, period).order_by().values("created_at", "thread_id", "owner__username", *USAGE_FIELDS)
    for row in rows:
        day = row["created_at"].astimezone(period.tz).date()
        usage = _usage_of(row)
        if day in days:
            add_usage(days[day], usage)
            day_runs[day] += 1
        add_usage(models, usage)
        for name in usage:
            model_runs[name] += 1
        add_usage(threads[row["thread_id"]], usage)
        thread_runs[row["thread_id"]] += 1
        add_usage(users[row["owner__username"]], usage)
        user_runs[row["owner__username"]] += 1

    def entry(usage: dict, runs: int) -> dict:
        return {"runs": runs, "tokens": _tokens(usage), "cost": cost_of(usage).as_dict()}

    series = [{"date": d.isoformat(), **entry(u, day_runs[d])} for d, u in days.items()]
    by_model = sorted(({"model": name, **entry({name: u}, model_runs[name])} for name, u in models.items()),
                      key=lambda e: -e["tokens"]["total"])
    top_threads = _top({tid: entry(u, thread_runs[tid]) for tid, u in threads.items()}, top)
    titles = thread_titles(t for t, _ in top_threads)
    result = {
        "period": period.as_dict(), "user": scope.label, "total": entry(models, sum(day_runs.values())), "days": series,
        "by_model": by_model,
        "top_threads": [{"thread_id": tid, "thread_title": titles.get(tid, ""), **e} for tid, e in top_threads],
    }
    if scope.everyone:
        result["top_users"] = [{"user": name, **e} for name, e in _top({u: entry(v, user_runs[u]) for u, v in users.items()}, top)]
    return result


def _top(entries: dict[str, dict], n: int) -> list[tuple[str, dict]]:
    """Most expensive first; unpriced usage ranks by tokens after every priced entry."""
    def key(item):
        amount = item[1]["cost"]["amount"]
        return (amount is not None, amount or 0, item[1]["tokens"]["total"])

    return sorted(entries.items(), key=key, reverse=True)[:n]
