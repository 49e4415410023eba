"""Thumbs up/down on answers: one rating per user per message of a run.

A rating names the answer it is about by its message id. Without one it is about the run's
last answer (what the chat shows under a finished reply), resolved from the run's journal, so
a client that only knows the run still rates the message the user saw. The run's messages
(its journal's ``message`` events) are handed in by the caller: the journal is the run engine's.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from apps.errors import InvalidRequest
from apps.threads.models import Feedback

MAX_COMMENT = 4000
AI_TYPES = ("ai", "AIMessage", "AIMessageChunk")


def feedback_json(fb: Feedback) -> dict:
    return {"feedback_id": fb.pk, "run_id": str(fb.run_id), "thread_id": fb.thread_id, "user_id": fb.owner_id,
            "message_id": fb.message_id, "rating": fb.rating, "comment": fb.comment,
            "created_at": fb.created_at.isoformat(), "updated_at": fb.updated_at.isoformat()}


def _last_answer_id(messages: list[dict]) -> str:
    for content in reversed(messages):
        if content.get("type") in AI_TYPES and content.get("id") and not (content.get("additional_kwargs") or {}).get("hide_from_ui"):
            return str(content["id"])
    return ""


def _message_id(run, messages: list[dict], message_id) -> str:
    if message_id in (None, ""):
        return _last_answer_id(messages)
    if not isinstance(message_id, str) or len(message_id) > 128:
        raise InvalidRequest("message_id must be a string of at most 128 characters")
    if not any(c.get("id") == message_id and c.get("type") in AI_TYPES for c in messages):
        raise InvalidRequest(f"message_id: run {run.pk} has no answer {message_id!r}")
    return message_id


def check_rating(data) -> tuple[int, str]:
    if not isinstance(data, dict):
        raise InvalidRequest("the request body must be a JSON object")
    unknown = sorted(set(data) - {"rating", "comment", "message_id"})
    if unknown:
        raise InvalidRequest(f"unknown field(s): {', '.join(unknown)}")
    rating = data.get("rating")
    if isinstance(rating, bool) or rating not in (1, -1):
        raise InvalidRequest(f"rating must be 1 or -1, got {rating!r}")
    comment = data.get("comment") or ""
    if not isinstance(comment, str):
        raise InvalidRequest("comment must be a string")
    if len(comment) > MAX_COMMENT:
        raise InvalidRequest(f"comment is limited to {MAX_COMMENT} characters")
    return int(rating), comment.strip()


def feedback_upsert(*, user, run, messages: list[dict], data) -> Feedback:
    rating, comment = check_rating(data)
    message_id = _message_id(run, messages, data.get("message_id"))
    defaults = {"thread_id": run.thread_id, "rating": rating, "comment": comment}
    try:
        with transaction.atomic():
            fb, _ = Feedback.objects.update_or_create(run=run, owner=user, message_id=message_id, defaults=defaults)
    except IntegrityError:
        # Two saves of the same rating raced: the other inserted first, so this one updates.
        fb = Feedback.objects.get(run=run, owner=user, message_id=message_id)
        for key, value in defaults.items():
            setattr(fb, key, value)
        fb.save(update_fields=[*defaults, "updated_at"])
    return fb


def feedback_delete(*, user, run, messages: list[dict], message_id: str | None = None) -> int:
    """Remove the user's rating of the message (default: the run's last answer); how many went."""
    qs = Feedback.objects.filter(run=run, owner=user)
    if message_id is not None:
        qs = qs.filter(message_id=message_id)
    else:
        qs = qs.filter(message_id__in={_last_answer_id(messages), ""})
    count, _ = qs.delete()
    return count


def feedback_for_run(*, user, run) -> list[Feedback]:
    return list(Feedback.objects.filter(run=run, owner=user).order_by("created_at"))


def feedback_by_message(*, user, run_ids: set[str]) -> dict[tuple[str, str], dict]:
    """(run id, message id) → {feedback_id, rating, comment} for the message page; one query."""
    if not run_ids:
        return {}
    rows = Feedback.objects.filter(owner_id=user.pk, run_id__in=run_ids).values_list("run_id", "message_id", "pk", "rating", "comment")
    return {(str(r), m): {"feedback_id": pk, "rating": rating, "comment": comment} for r, m, pk, rating, comment in rows}


def attach_feedback(*, user, rows: list[dict]) -> list[dict]:
    """Set each message row's ``feedback`` to the user's rating of that answer. A rating
    without a message id goes on its run's last answer on the page."""
    found = feedback_by_message(user=user, run_ids={r["run_id"] for r in rows})
    if not found:
        return rows
    last_answer: dict[str, dict] = {}
    for row in rows:
        content = row.get("content") or {}
        if content.get("type") in AI_TYPES:
            last_answer[row["run_id"]] = row
            hit = found.get((row["run_id"], str(content.get("id") or "")))
            if hit is not None:
                row["feedback"] = hit
    for run_id, row in last_answer.items():
        loose = found.get((run_id, ""))
        if loose is not None and row.get("feedback") is None:
            row["feedback"] = loose
    return rows
