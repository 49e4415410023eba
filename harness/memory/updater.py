"""The passive updater: one structured model call per queued conversation, then checks.

The model proposes summary updates, new facts, removals, a review of aged facts and
merges of fragmented ones. Nothing it says is trusted as is: facts under the confidence
threshold, instructions scoped to one task, unknown or protected ids and anything past
the per-cycle caps are dropped, and what was dropped is logged in one line. The changes
are applied to a freshly loaded document and saved with its revision; a conflict reloads
and applies them again (the model is not asked twice).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from harness.memory.store import MemoryStore, new_fact_id
from harness.memory.types import (CATEGORIES, MAX_FACT_CHARS, MAX_SUMMARY_CHARS, SUMMARY_KEYS, Fact, MemoryDoc,
                                  RevisionConflict, now)

logger = logging.getLogger(__name__)

MAX_NEW_FACTS = 20
MAX_REMOVALS = 20
MAX_STALE_REVIEWS = 10
MAX_MERGES = 5
MAX_VALID_DAYS = 365
MAX_MESSAGE_CHARS = 4000
SAVE_ATTEMPTS = 8
# Instructions for one piece of work read like this; they must not become lasting facts.
_TASK_SCOPED = re.compile(
    r"\b(for|in|on) (this|the current|today's) (report|task|document|doc|email|essay|draft|answer|response|reply|"
    r"file|project|presentation|slide|chat|conversation|message|run|request|one)\b|\bthis time\b|\bjust for now\b",
    re.IGNORECASE)

SYSTEM = """You maintain the long-term memory an assistant keeps about one user.
Read the memory and the new conversation, then answer with ONE JSON object and nothing else:
{"user": {"workContext": str|null, "personalContext": str|null, "topOfMind": str|null},
 "history": {"recentMonths": str|null, "earlierContext": str|null, "longTermBackground": str|null},
 "newFacts": [{"content": str, "category": one of %s, "confidence": 0..1, "scope": "lasting"|"task", "validDays": int|null, "messageId": str|null}],
 "factsToRemove": [fact id],
 "staleReview": [{"id": fact id, "action": "keep"|"remove"|"extend", "validDays": int|null}],
 "merges": [{"sources": [fact ids], "content": str, "category": str, "confidence": 0..1}]}
null keeps a summary as it is. Store only durable facts about the user; an instruction for one task
("for this report use British spelling") has scope "task". Remove facts the conversation contradicts.
Review only the facts listed as due for review. Merge only facts that say parts of the same thing.""" % ", ".join(CATEGORIES)


@dataclass
class UpdateJob:
    owner: str
    agent: str
    thread_id: str
    run_id: str
    # [{"role": "user"|"assistant", "content": str, "id": str}]: user messages and final answers.
    messages: list[dict]

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.owner, self.agent, self.thread_id)


@dataclass
class UpdateOutcome:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    extended: list[str] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    skipped: str = ""
    # What the update's model call used (budgets count it toward the user): name, usage_metadata.
    model_name: str = ""
    usage: dict = field(default_factory=dict)


def aged_facts(doc: MemoryDoc, at: dt.datetime) -> list[Fact]:
    return [f for f in doc.facts if f.valid_until is not None and f.valid_until <= at]


def build_messages(doc: MemoryDoc, job: UpdateJob, at: dt.datetime) -> list:
    summaries = {f"{section}.{key}": doc.summaries.get(attr, "") for attr, section, key in SUMMARY_KEYS}
    facts = [{"id": f.id, "content": f.content, "category": f.category, "confidence": f.confidence} for f in doc.facts]
    aged = [f.id for f in aged_facts(doc, at)]
    convo = "\n".join(f"[{m['role']} {m.get('id') or ''}] {str(m['content'])[:MAX_MESSAGE_CHARS]}" for m in job.messages)
    body = (f"Current summaries: {json.dumps(summaries, ensure_ascii=False)}\n"
            f"Current facts: {json.dumps(facts, ensure_ascii=False)}\n"
            f"Facts due for review (at most {MAX_STALE_REVIEWS}): {json.dumps(aged)}\n\n"
            f"New conversation:\n{convo}")
    return [SystemMessage(content=SYSTEM), HumanMessage(content=body)]


def parse_reply(text: str) -> dict | None:
    text = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def _list(data: dict, key: str, dropped: list[str]) -> list:
    value = data.get(key) or []
    if not isinstance(value, list):
        dropped.append(f"{key} is not a list")
        return []
    return value


def _confidence(value: Any) -> float | None:
    try:
        c = float(value)
    except (TypeError, ValueError):
        return None
    return c if 0 <= c <= 1 else None


def _days(value: Any) -> int | None:
    try:
        return max(1, min(int(value), MAX_VALID_DAYS))
    except (TypeError, ValueError):
        return None


def is_task_scoped(content: str) -> bool:
    return bool(_TASK_SCOPED.search(content))


def apply_changes(doc: MemoryDoc, data: dict, job: UpdateJob, *, threshold: float, max_facts: int,
                  at: dt.datetime | None = None) -> UpdateOutcome:
    """Apply checked changes to *doc* in place."""
    at = at or now()
    out = UpdateOutcome()
    dropped = out.dropped
    for attr, section, key in SUMMARY_KEYS:
        part = data.get(section)
        value = part.get(key) if isinstance(part, dict) else None
        if isinstance(value, dict):
            value = value.get("summary")
        if value is None:
            continue
        if not isinstance(value, str):
            dropped.append(f"{section}.{key} is not a string")
            continue
        if value != doc.summaries.get(attr, ""):
            doc.summaries[attr] = value[:MAX_SUMMARY_CHARS]
            out.summaries.append(attr)

    by_id = {f.id: f for f in doc.facts}
    gone: set[str] = set()

    def remove(fid: Any, why: str) -> bool:
        fact = by_id.get(str(fid))
        if fact is None or fact.id in gone:
            dropped.append(f"{why} of unknown fact {str(fid)[:40]}")
            return False
        if fact.protected:
            dropped.append(f"{why} of protected fact {fact.id}")
            return False
        gone.add(fact.id)
        return True

    for fid in _list(data, "factsToRemove", dropped)[:MAX_REMOVALS]:
        if remove(fid, "removal"):
            out.removed.append(str(fid))

    aged = {f.id for f in aged_facts(doc, at)}
    reviews = _list(data, "staleReview", dropped)
    if len(reviews) > MAX_STALE_REVIEWS:
        dropped.append(f"{len(reviews) - MAX_STALE_REVIEWS} stale reviews past the cap")
    for review in reviews[:MAX_STALE_REVIEWS]:
        if not isinstance(review, dict) or str(review.get("id")) not in aged:
            dropped.append("review of a fact not due for review")
            continue
        fact, action = by_id[str(review["id"])], review.get("action")
        if action == "remove":
            if remove(fact.id, "stale removal"):
                out.removed.append(fact.id)
        elif action in ("extend", "keep"):
            fact.valid_until = at + dt.timedelta(days=_days(review.get("validDays")) or 30)
            fact.last_confirmed_at = at
            fact.revision += 1
            out.extended.append(fact.id)

    merges = _list(data, "merges", dropped)
    if len(merges) > MAX_MERGES:
        dropped.append(f"{len(merges) - MAX_MERGES} merges past the cap")
    new_facts: list[Fact] = []
    for merge in merges[:MAX_MERGES]:
        sources = [str(s) for s in merge.get("sources") or []] if isinstance(merge, dict) else []
        content = merge.get("content") if isinstance(merge, dict) else None
        parts = [by_id.get(s) for s in sources]
        if len(set(sources)) < 2 or any(p is None or p.id in gone or p.protected for p in parts):
            dropped.append("merge whose sources are missing, fewer than two or protected")
            continue
        if not isinstance(content, str) or not content.strip() or len(content) > MAX_FACT_CHARS:
            dropped.append("merge without usable content")
            continue
        first = min(parts, key=lambda p: p.created_at)
        proposed = _confidence(merge.get("confidence"))
        floor = min(p.confidence for p in parts)  # a merge never raises confidence
        category = merge.get("category") if merge.get("category") in CATEGORIES else first.category
        merged = Fact(id=new_fact_id(), content=content.strip(), category=category,
                      confidence=floor if proposed is None else min(proposed, floor), created_at=first.created_at,
                      last_confirmed_at=at, valid_until=max((p.valid_until for p in parts if p.valid_until), default=None),
                      source_kind=first.source_kind, source_thread_id=first.source_thread_id,
                      source_run_id=first.source_run_id, source_message_id=first.source_message_id)
        gone.update(p.id for p in parts)
        new_facts.append(merged)
        out.merged.append(merged.id)

    message_ids = [m.get("id") for m in job.messages if m.get("id")]
    user_ids = [m.get("id") for m in job.messages if m.get("role") == "user" and m.get("id")]
    known = {f.content.strip().lower(): f for f in doc.facts if f.id not in gone}
    proposed_facts = _list(data, "newFacts", dropped)
    if len(proposed_facts) > MAX_NEW_FACTS:
        dropped.append(f"{len(proposed_facts) - MAX_NEW_FACTS} new facts past the cap")
    for item in proposed_facts[:MAX_NEW_FACTS]:
        content = item.get("content") if isinstance(item, dict) else None
        if not isinstance(content, str) or not content.strip():
            dropped.append("new fact without content")
            continue
        content = content.strip()
        confidence = _confidence(item.get("confidence"))
        if confidence is None or confidence < threshold:
            dropped.append(f"fact under the confidence threshold ({item.get('confidence')!r})")
            continue
        if item.get("scope") == "task" or is_task_scoped(content):
            dropped.append("task-scoped instruction")
            continue
        if len(content) > MAX_FACT_CHARS:
            dropped.append("fact over the size limit")
            continue
        same = known.get(content.lower())
        if same is not None:  # said again: confirmed, not duplicated
            same.last_confirmed_at = at
            same.confidence = max(same.confidence, confidence)
            same.revision += 1
            continue
        days = _days(item.get("validDays"))
        mid = item.get("messageId") if item.get("messageId") in message_ids else (user_ids[-1] if user_ids else "")
        fact = Fact(id=new_fact_id(), content=content, category=item.get("category") if item.get("category") in CATEGORIES else "context",
                    confidence=confidence, created_at=at, last_confirmed_at=at,
                    valid_until=at + dt.timedelta(days=days) if days else None,
                    source_thread_id=job.thread_id, source_run_id=job.run_id, source_message_id=mid or "")
        known[content.lower()] = fact
        new_facts.append(fact)
        out.added.append(fact.id)

    doc.facts = [f for f in doc.facts if f.id not in gone] + new_facts
    if len(doc.facts) > max_facts:
        # Over the cap: the least confident, oldest conversation facts go first.
        removable = sorted((f for f in doc.facts if not f.protected), key=lambda f: (f.confidence, f.created_at))
        evict = {f.id for f in removable[: len(doc.facts) - max_facts]}
        doc.facts = [f for f in doc.facts if f.id not in evict]
        dropped.append(f"{len(evict)} facts evicted over memory.max_facts")
    return out


def run_update(store: MemoryStore, model: Any, job: UpdateJob, *, threshold: float, max_facts: int) -> UpdateOutcome:
    """Load, one model call, apply, save (retrying on a revision conflict)."""
    doc = store.load(job.owner, job.agent)
    if doc.paused:
        return UpdateOutcome(skipped="paused")
    if not job.messages:
        return UpdateOutcome(skipped="nothing to learn from")
    at = now()
    reply = model.invoke(build_messages(doc, job, at))
    spent = {"model_name": str((getattr(model, "metadata", None) or {}).get("deerflow_model_name") or getattr(model, "model_name", "") or ""),
             "usage": dict(getattr(reply, "usage_metadata", None) or {})}
    text = reply.content if isinstance(reply.content, str) else "".join(
        b.get("text", "") for b in reply.content if isinstance(b, dict))
    data = parse_reply(text)
    if data is None:
        logger.warning("memory update for thread %s ignored: the model's reply is not a JSON object", job.thread_id)
        return UpdateOutcome(skipped="invalid reply", **spent)
    for _ in range(SAVE_ATTEMPTS):
        outcome = apply_changes(doc, data, job, threshold=threshold, max_facts=max_facts, at=at)
        try:
            store.save(doc)
            break
        except RevisionConflict:
            doc = store.load(job.owner, job.agent)
            if doc.paused:
                return UpdateOutcome(skipped="paused")
    else:
        raise RevisionConflict(f"memory of thread {job.thread_id}: {SAVE_ATTEMPTS} conflicting saves in a row")
    if outcome.dropped:
        logger.warning("memory update for thread %s clamped: %s", job.thread_id, "; ".join(outcome.dropped))
    outcome.model_name, outcome.usage = spent["model_name"], spent["usage"]
    return outcome
