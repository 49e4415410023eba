"""Reads for runs and their events, always scoped to the caller."""

from __future__ import annotations

import uuid

from django.db.models import Count, F, Q, Sum

from apps.errors import InvalidRequest, NotFound
from apps.runs.models import Run, RunEvent
from apps.runs.visibility import hidden_run_ids
from harness.runtime.message_seq import message_identity


def run_get_for_user(*, user, thread_id: str, run_id: str) -> Run:
    import uuid

    try:
        uuid.UUID(str(run_id))
    except ValueError:
        raise NotFound(f"Run {run_id} not found") from None
    run = Run.objects.filter(pk=run_id, thread_id=thread_id, owner_id=user.pk).first()
    if run is None:
        raise NotFound(f"Run {run_id} not found")
    return run


def run_failure(*, run_id: str) -> dict | None:
    """What a stream's ``error`` event says about a run that failed (``{error, message,
    name}``, the shape its worker or recovery published): from the run's ``run.error`` journal
    entry, for a stream the bridge no longer holds. None unless the run's status is ``error``."""
    run = Run.objects.filter(pk=run_id).only("status", "error").first()
    if run is None or run.status != Run.Status.ERROR:
        return None
    event = (RunEvent.objects.filter(run_id=run_id, event_type="run.error").order_by("-seq")
             .values("content", "metadata").first())
    if event is not None and isinstance(event["content"], str):
        name = str((event["metadata"] or {}).get("error_type") or "RunError")
        return {"error": name, "message": event["content"], "name": name}
    return {"error": "RunError", "message": run.error, "name": "RunError"}


def thread_has_active_run(thread_id: str) -> bool:
    return Run.objects.filter(thread_id=thread_id, status__in=Run.ACTIVE_STATUSES).exists()


def run_list(*, thread, limit: int = 10, offset: int = 0, status: str | None = None):
    if not (1 <= limit <= 1000) or offset < 0:
        raise InvalidRequest("limit must be 1 to 1000 and offset non-negative")
    qs = Run.objects.filter(thread=thread)
    if status:
        if status not in Run.Status.values:
            raise InvalidRequest(f"status must be one of {', '.join(Run.Status.values)}")
        qs = qs.filter(status=status)
    return qs.order_by("-created_at")[offset : offset + limit]


def runs_for_operator(*, request_id: str | None = None, limit: int = 25):
    """Runs across users, newest first, for staff only (the observability page): those a
    request started when ``request_id`` is given."""
    qs = Run.objects.select_related("owner").only(
        "id", "thread_id", "owner__username", "status", "request_id", "model_name", "created_at", "started_at", "finished_at")
    if request_id:
        qs = qs.filter(request_id=request_id)
    return list(qs.order_by("-created_at")[:limit])


def messages_page(*, thread, limit: int = 50, before_seq: int | None = None) -> dict:
    """The thread's visible messages, newest page first; each page is in chronological order.
    Messages of replaced or failed replay runs are left out."""
    if not 1 <= limit <= 200:
        raise InvalidRequest("limit must be from 1 to 200")
    qs = RunEvent.objects.filter(thread=thread, category="message")
    hidden = hidden_run_ids(thread_id=thread.pk)
    if hidden:  # answers replaced by regenerate / edit-rerun (apps/runs/visibility.py)
        qs = qs.exclude(run_id__in=hidden)
    if before_seq is not None:
        qs = qs.filter(seq__lt=before_seq)
    rows = list(qs.order_by("-seq")[: limit + 1])
    has_more = len(rows) > limit
    rows = rows[:limit][::-1]
    from apps.runs.journal import event_record

    return {
        "data": [{**event_record(r), "feedback": None} for r in rows],
        "has_more": has_more,
        "next_before_seq": rows[0].seq if has_more and rows else None,
    }


def thread_token_usage(*, thread) -> dict:
    runs = Run.objects.filter(thread=thread)
    totals = runs.aggregate(inp=Sum("input_tokens"), out=Sum("output_tokens"), cache=Sum("cache_read_tokens"), n=Count("id"))
    by_model: dict[str, dict[str, int]] = {}
    for usage in runs.values_list("token_usage", flat=True):
        for model, entry in ((usage or {}).get("by_model") or {}).items():
            agg = by_model.setdefault(model, {"tokens": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "runs": 0})
            agg["tokens"] += entry.get("total_tokens", 0)
            agg["input_tokens"] += entry.get("input_tokens", 0)
            agg["output_tokens"] += entry.get("output_tokens", 0)
            agg["cache_read_tokens"] += entry.get("cache_read_tokens", 0)
            agg["runs"] += 1
    inp, out = totals["inp"] or 0, totals["out"] or 0
    return {
        "thread_id": thread.pk,
        "total_tokens": inp + out,
        "total_input_tokens": inp,
        "total_output_tokens": out,
        "total_cache_read_tokens": totals["cache"] or 0,
        "total_runs": totals["n"],
        "by_model": by_model,
    }


def run_message_contents(*, run: Run) -> list[dict]:
    """The run's messages as journalled, in order (what its answers were)."""
    return [c for c in RunEvent.objects.filter(run=run, category="message").order_by("seq").values_list("content", flat=True)
            if isinstance(c, dict)]


def run_events_page(*, run: Run, event_types: list[str] | None = None, task_id: str | None = None,
                    limit: int = 500, after_seq: int | None = None) -> list[dict]:
    """A run's journal in ``seq`` order; page on with ``after_seq`` = the last ``seq`` seen."""
    if not 1 <= limit <= 2000:
        raise InvalidRequest("limit must be from 1 to 2000")
    qs = RunEvent.objects.filter(thread_id=run.thread_id, run_id=run.pk)
    if event_types:
        qs = qs.filter(event_type__in=event_types)
    if task_id:
        qs = qs.filter(metadata__task_id=task_id)
    if after_seq is not None:
        qs = qs.filter(seq__gt=after_seq)
    from apps.runs.journal import event_record

    return [event_record(r) for r in qs.order_by("seq")[:limit]]


def run_messages_page(*, run: Run, limit: int = 50, after_seq: int | None = None) -> dict:
    """One run's messages in ``seq`` order, forwards from ``after_seq``."""
    if not 1 <= limit <= 200:
        raise InvalidRequest("limit must be from 1 to 200")
    qs = RunEvent.objects.filter(thread_id=run.thread_id, run_id=run.pk, category="message")
    if after_seq is not None:
        qs = qs.filter(seq__gt=after_seq)
    rows = list(qs.order_by("seq")[: limit + 1])
    has_more = len(rows) > limit
    rows = rows[:limit]
    from apps.runs.journal import event_record

    return {"data": [event_record(r) for r in rows], "has_more": has_more,
            "next_after_seq": rows[-1].seq if has_more and rows else None}


# -- for the feature apps, which read runs only through these --------------------------------

def run_outcome(*, run_id: str) -> dict:
    """{status, error} of the run; a run that is gone reads as an error saying so."""
    return Run.objects.filter(pk=run_id).values("status", "error").first() or {"status": Run.Status.ERROR, "error": "the run is gone"}


def run_with_thread(*, run_id: str) -> Run | None:
    return Run.objects.select_related("thread").filter(pk=run_id).first()


def thread_active_run(*, thread_id: str) -> Run | None:
    return Run.objects.filter(thread_id=thread_id, status__in=Run.ACTIVE_STATUSES).first()


def thread_latest_run(*, thread_id: str) -> Run | None:
    return Run.objects.filter(thread_id=thread_id).order_by("-created_at").first()


def thread_last_run_kwargs(*, thread_id: str) -> dict:
    """The options the thread's latest run was started with (what a resume must rebuild)."""
    return Run.objects.filter(thread_id=thread_id).order_by("-created_at").values_list("kwargs", flat=True).first() or {}


def pending_run_count() -> int:
    return Run.objects.filter(status=Run.Status.PENDING).count()


def owner_run_usage(*, owner_id: int, since) -> list[tuple]:
    """(created_at, token_usage, input+output tokens) of each of the owner's runs since ``since``."""
    return list(Run.objects.filter(owner_id=owner_id, created_at__gte=since)
                .annotate(t=F("input_tokens") + F("output_tokens")).values_list("created_at", "token_usage", "t"))


def owner_token_totals(*, owner_id: int, since, day) -> tuple[int, int]:
    """(tokens since ``since``, tokens since ``day``) of the owner's runs, in one aggregate."""
    tokens = F("input_tokens") + F("output_tokens")
    agg = Run.objects.filter(owner_id=owner_id, created_at__gte=since).aggregate(
        total=Sum(tokens), day=Sum(tokens, filter=Q(created_at__gte=day)))
    return agg["total"] or 0, agg["day"] or 0


# -- for the operator console, which scopes and aggregates them itself ----------------------

def runs_between(*, start=None, end=None, statuses=None):
    """Everyone's runs created in [start, end) (either end open), optionally in ``statuses``:
    a queryset the console filters by owner and aggregates."""
    qs = Run.objects.all()
    if start is not None:
        qs = qs.filter(created_at__gte=start)
    if end is not None:
        qs = qs.filter(created_at__lt=end)
    if statuses is not None:
        qs = qs.filter(status__in=list(statuses))
    return qs


def run_find(*, run_id: str) -> Run | None:
    """Any user's run by id (operators only: callers check that)."""
    return Run.objects.filter(pk=run_id).first()


# -- for thread actions (apps/chat/actions), which rewind and branch a thread's runs ----------

def thread_runs_oldest_first(*, thread_id: str, excluding=()) -> list[Run]:
    return list(Run.objects.filter(thread_id=thread_id).exclude(pk__in=list(excluding)).order_by("created_at"))


def thread_runs_newest_first(*, thread_id: str, excluding=(), limit: int = 20) -> list[Run]:
    return list(Run.objects.filter(thread_id=thread_id).exclude(pk__in=list(excluding)).order_by("-created_at")[:limit])


def thread_run(*, thread_id: str, run_id: str) -> Run | None:
    """The thread's run with that id (None for another thread's, or an id that is no uuid)."""
    try:
        uuid.UUID(str(run_id))
    except ValueError:
        return None
    return Run.objects.filter(thread_id=thread_id, pk=str(run_id)).first()


def thread_latest_model(*, thread_id: str) -> str | None:
    """The model the thread's latest run that named one used."""
    return Run.objects.filter(thread_id=thread_id).exclude(model_name="").order_by("-created_at").values_list("model_name", flat=True).first()


def answer_run_id(*, thread_id: str, message_id: str) -> str | None:
    """The run that wrote the assistant message ``message_id`` in the thread."""
    event = RunEvent.objects.filter(thread_id=thread_id, event_type="llm.ai.response", content__id=message_id).only("run_id").first()
    return str(event.run_id) if event is not None else None


def run_has_answer(*, run_id: str) -> bool:
    return RunEvent.objects.filter(run_id=run_id, event_type="llm.ai.response").exists()


def run_has_event(*, run_id: str, event_type: str) -> bool:
    return RunEvent.objects.filter(run_id=run_id, event_type=event_type).exists()


def run_message_ids(*, run_id: str, event_type: str | None = None) -> set[str]:
    """The ids of the run's journalled messages (of one event type, when given)."""
    qs = RunEvent.objects.filter(run_id=run_id, category="message")
    if event_type is not None:
        qs = qs.filter(event_type=event_type)
    return {str(i) for i in qs.values_list("content__id", flat=True) if i}


def thread_has_message(*, thread_id: str, message_id: str) -> bool:
    return RunEvent.objects.filter(thread_id=thread_id, category="message", content__id=message_id).exists()


def run_answer_events(*, run_id: str, newest_first: bool = False, limit: int | None = None):
    """The run's AI responses and tool results, (event type, content), streamed: oldest first,
    or the last ``limit`` newest first."""
    rows = (RunEvent.objects.filter(run_id=run_id, event_type__in=("llm.ai.response", "llm.tool.result"))
            .order_by("-seq" if newest_first else "seq").values_list("event_type", "content"))
    for kind, content in (rows[:limit] if limit is not None else rows).iterator():
        yield kind, content if isinstance(content, dict) else {}


# Bound parameters per IN list: far under every backend's limit, whatever the thread's length.
_SEQ_LOOKUP_CHUNK = 500
# From this many identities a lookup reads the thread's message rows whole.
_SEQ_SCAN_FROM = 50


def message_seqs(*, thread_id: str, identities) -> dict[str, int]:
    """``{identity: seq}`` for the messages the thread's visible message feed holds (what
    ``/messages/page`` shows), by ``harness.runtime.message_seq.message_identity``; identities it
    does not hold are absent. The rows of replaced or failed replays are not in that feed, so
    their seqs are never given out. Should an identity be journaled twice, the first row wins: a
    message keeps the place it first took."""
    wanted = {i for i in identities if i}
    if not wanted:
        return {}
    ids = sorted(i.removeprefix("message:") for i in wanted if i.startswith("message:"))
    tool_ids = sorted(i.removeprefix("tool:") for i in wanted if i.startswith("tool:"))
    hidden = hidden_run_ids(thread_id=thread_id)
    found: dict[str, int] = {}
    if len(wanted) >= _SEQ_SCAN_FROM:
        # Many at once (a long thread's first frame of a run): one read of the thread's message
        # rows, matched here, instead of an IN list whose every value Django adapts as JSON.
        lookups = [{}]
    else:
        lookups = [{key: values[start:start + _SEQ_LOOKUP_CHUNK]}
                   for key, values in (("content__id__in", ids), ("content__tool_call_id__in", tool_ids))
                   for start in range(0, len(values), _SEQ_LOOKUP_CHUNK)]
    for lookup in lookups:
        qs = RunEvent.objects.filter(thread_id=thread_id, category="message", **lookup)
        if hidden:
            qs = qs.exclude(run_id__in=hidden)
        for seq, message_id, tool_call_id in qs.values_list("seq", "content__id", "content__tool_call_id"):
            identity = message_identity({"id": message_id, "tool_call_id": tool_call_id})
            if identity in wanted and (identity not in found or seq < found[identity]):
                found[identity] = seq
    return found
