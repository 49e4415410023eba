"""The passive updater: one structured model call per queued conversation, then checks.

The model proposes summary updates, new facts and removals; when ``memory.staleness_*``
finds enough facts due for review it is shown them to keep, extend or remove, and with
``memory.consolidation_enabled`` it is shown the categories holding many facts to merge
(DeerFlow's keys and guardrails, in the same call: no extra model call). Nothing it says is
trusted as is: facts under the confidence threshold, instructions scoped to one task,
unknown or protected ids, reviews or merges of facts it was not shown, and anything past the
per-cycle caps are dropped, and what was dropped is logged in one line. The changes are
applied to a freshly loaded document and saved with its revision; a conflict reloads and
applies them again (the model is not asked twice).

Memory is one document per user and agent, so the conversations of several threads queued
together are learned from in one call (``run_update`` takes a batch of one owner's and agent's
jobs): one load, one model call, one save instead of one each, with every fact traced to the
thread and run of the message it came from.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from harness.config.app_config import MemoryConfig
from harness.memory.store import MemoryStore, new_fact_id
from harness.memory.types import (CATEGORIES, MAX_FACT_CHARS, MAX_SUMMARY_CHARS, SUMMARY_KEYS, Fact, MemoryDoc,
                                  RevisionConflict, now)

logger = logging.getLogger(__name__)

MAX_NEW_FACTS = 20
MAX_REMOVALS = 20
# Facts due for review shown in one call, oldest first (the rest wait for the next one).
MAX_STALE_SHOWN = 50
MAX_MESSAGE_CHARS = 4000
# A batch of conversations shown in one call holds at most this many characters of them (a
# larger conversation goes alone): the prompt stays far inside any chat model's context.
MAX_BATCH_CHARS = 32000
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
 "factsToRemove": [fact id]%%s}
null keeps a summary as it is. Store only durable facts about the user; an instruction for one task
("for this report use British spelling") has scope "task". Remove facts the conversation contradicts.
validDays: how long a new fact is likely to stay true (null: no particular limit).""" % ", ".join(CATEGORIES)

STALENESS = """
Staleness review: the facts listed as due for review have reached their review date. For each, answer
"keep" (still likely true, even if not mentioned: stable traits often stay true), "extend" (keep, and
review again in validDays days) or "remove" (outdated or contradicted). When in doubt, keep."""

CONSOLIDATION = """
Consolidation: the groups listed hold many facts of one category. Where several facts of a group say
parts of the same thing, merge them into one richer fact (at most %d merges, each of 2 to %d facts of
one group); leave the others alone."""


def _stale_shape() -> str:
    return ',\n "staleReview": [{"id": fact id, "action": "keep"|"remove"|"extend", "validDays": int|null}]'


def _merge_shape() -> str:
    return ',\n "merges": [{"sources": [fact ids], "content": str, "category": str, "confidence": 0..1}]'


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

    @property
    def memory(self) -> tuple[str, str]:
        """The memory document it updates: jobs with the same one may be learned from together."""
        return (self.owner, self.agent)

    @property
    def size(self) -> int:
        """The characters of conversation it puts in the updater's prompt."""
        return sum(min(len(str(m.get("content", ""))), MAX_MESSAGE_CHARS) for m in self.messages)


def _batch(jobs: UpdateJob | Sequence[UpdateJob]) -> list[UpdateJob]:
    jobs = [jobs] if isinstance(jobs, UpdateJob) else list(jobs)
    if not jobs or len({j.memory for j in jobs}) > 1:
        raise ValueError("a memory update takes one or more jobs of one owner and agent")
    return jobs


def _conversation(job: UpdateJob) -> str:
    return "\n".join(f"[{m['role']} {m.get('id') or ''}] {str(m['content'])[:MAX_MESSAGE_CHARS]}" for m in job.messages)


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


def _review_date(fact: Fact, cfg: MemoryConfig) -> dt.datetime:
    """When *fact* is due for review: its own validity, else ``staleness_age_days`` after it
    was last confirmed (or learned)."""
    if fact.valid_until is not None:
        return fact.valid_until
    return (fact.last_confirmed_at or fact.created_at) + dt.timedelta(days=cfg.staleness_age_days)


def stale_candidates(doc: MemoryDoc, at: dt.datetime, cfg: MemoryConfig) -> list[Fact]:
    """The facts the model reviews this cycle, oldest review date first: none unless the review
    is on and at least ``staleness_min_candidates`` facts are due. Facts the owner wrote and
    those of ``staleness_protected_categories`` are never due."""
    if not cfg.staleness_review_enabled:
        return []
    protected = set(cfg.staleness_protected_categories)
    due = sorted((f for f in doc.facts if not f.protected and f.category not in protected and _review_date(f, cfg) <= at),
                 key=lambda f: _review_date(f, cfg))
    return due[:MAX_STALE_SHOWN] if len(due) >= cfg.staleness_min_candidates else []


def consolidation_groups(doc: MemoryDoc, cfg: MemoryConfig) -> dict[str, list[Fact]]:
    """The categories shown for merging: off unless ``consolidation_enabled``; those holding at
    least ``consolidation_min_facts`` learned facts (not a protected category), the largest
    ``consolidation_max_groups_per_cycle`` of them, each with its first
    ``consolidation_max_sources`` facts by confidence."""
    if not cfg.consolidation_enabled:
        return {}
    protected = set(cfg.staleness_protected_categories)
    groups: dict[str, list[Fact]] = {}
    for f in doc.facts:
        if not f.protected and f.category not in protected:
            groups.setdefault(f.category, []).append(f)
    big = sorted(((c, g) for c, g in groups.items() if len(g) >= cfg.consolidation_min_facts), key=lambda cg: (-len(cg[1]), cg[0]))
    return {c: sorted(g, key=lambda f: -f.confidence)[:cfg.consolidation_max_sources]
            for c, g in big[:cfg.consolidation_max_groups_per_cycle]}


def build_messages(doc: MemoryDoc, jobs: UpdateJob | Sequence[UpdateJob], at: dt.datetime, cfg: MemoryConfig) -> list:
    jobs = _batch(jobs)
    summaries = {f"{section}.{key}": doc.summaries.get(attr, "") for attr, section, key in SUMMARY_KEYS}
    facts = [{"id": f.id, "content": f.content, "category": f.category, "confidence": f.confidence} for f in doc.facts]
    stale = stale_candidates(doc, at, cfg)
    groups = consolidation_groups(doc, cfg)
    system = SYSTEM % ((_stale_shape() if stale else "") + (_merge_shape() if groups else ""))
    body = (f"Current summaries: {json.dumps(summaries, ensure_ascii=False)}\n"
            f"Current facts: {json.dumps(facts, ensure_ascii=False)}\n")
    if stale:
        system += STALENESS
        due = [{"id": f.id, "content": f.content, "category": f.category, "confidence": f.confidence,
                "since": (f.last_confirmed_at or f.created_at).date().isoformat()} for f in stale]
        body += f"Facts due for review: {json.dumps(due, ensure_ascii=False)}\n"
    if groups:
        system += CONSOLIDATION % (cfg.consolidation_max_groups_per_cycle, cfg.consolidation_max_sources)
        shown = {c: [{"id": f.id, "content": f.content, "confidence": f.confidence} for f in g] for c, g in groups.items()}
        body += f"Groups to consolidate: {json.dumps(shown, ensure_ascii=False)}\n"
    if len(jobs) == 1:
        body += f"\nNew conversation:\n{_conversation(jobs[0])}"
    else:  # one user's threads: what they say about the user adds up
        body += f"\nNew conversations ({len(jobs)}, one per chat thread):"
        body += "".join(f"\n\n[thread {j.thread_id}]\n{_conversation(j)}" for j in jobs)
    return [SystemMessage(content=system), HumanMessage(content=body)]


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


def _days(value: Any, cap: int) -> int | None:
    try:
        return max(1, min(int(value), cap))
    except (TypeError, ValueError, OverflowError):
        return None


def is_task_scoped(content: str) -> bool:
    return bool(_TASK_SCOPED.search(content))


def apply_changes(doc: MemoryDoc, data: dict, jobs: UpdateJob | Sequence[UpdateJob], cfg: MemoryConfig, *,
                  at: dt.datetime | None = None) -> UpdateOutcome:
    """Apply checked changes to *doc* in place. Reviews and merges count only for the facts
    the model was shown (``stale_candidates``, ``consolidation_groups`` of the same document).
    A new fact's source is the thread and run of the message it names, else the latest
    conversation's last user message."""
    jobs = _batch(jobs)
    at = at or now()
    threshold, max_facts = cfg.fact_confidence_threshold, cfg.max_facts
    # The longest a new fact may be valid before its first review (DeerFlow's creation cap).
    creation_cap = int(cfg.staleness_age_days * cfg.staleness_max_lifetime_multiplier)
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

    shown_stale = {f.id for f in stale_candidates(doc, at, cfg)}
    reviews = [r for r in _list(data, "staleReview", dropped) if isinstance(r, dict)]
    if any(str(r.get("id")) not in shown_stale for r in reviews):
        dropped.append("review of a fact not due for review")
    reviews = [r for r in reviews if str(r.get("id")) in shown_stale and str(r["id"]) not in gone]
    removals = [by_id[str(r["id"])] for r in reviews if r.get("action") == "remove"]
    if len(removals) > cfg.staleness_max_removals_per_cycle:
        # Past the cap the least confident go first; the others stay (not extended) till next time.
        dropped.append(f"{len(removals) - cfg.staleness_max_removals_per_cycle} stale removals past the cap")
        removals = sorted(removals, key=lambda f: f.confidence)[:cfg.staleness_max_removals_per_cycle]
    for fact in removals:
        if remove(fact.id, "stale removal"):
            out.removed.append(fact.id)
    for review in reviews:
        fact, action = by_id[str(review["id"])], review.get("action")
        if action == "extend":
            days = _days(review.get("validDays"), cfg.staleness_max_extension_days) or cfg.staleness_age_days
            ceiling = fact.created_at + dt.timedelta(days=cfg.staleness_max_extension_days)
            fact.valid_until = min(at + dt.timedelta(days=days), ceiling)
        elif action == "keep":  # confirmed now: due again staleness_age_days from now
            fact.valid_until = None
        else:
            continue
        fact.last_confirmed_at = at
        fact.revision += 1
        out.extended.append(fact.id)

    groups = consolidation_groups(doc, cfg)
    mergeable = {f.id: category for category, group in groups.items() for f in doc.facts if f.category == category and not f.protected}
    merges = _list(data, "merges", dropped) if groups else []
    if data.get("merges") and not groups:
        dropped.append("merges while consolidation is off or no group was shown")
    new_facts: list[Fact] = []
    for merge in merges:
        if len(out.merged) >= cfg.consolidation_max_groups_per_cycle:
            dropped.append("merges past memory.consolidation_max_groups_per_cycle")
            break
        sources = list(dict.fromkeys(str(s) for s in merge.get("sources") or [])) if isinstance(merge, dict) else []
        content = merge.get("content") if isinstance(merge, dict) else None
        parts = [by_id.get(s) for s in sources]
        if not 2 <= len(sources) <= cfg.consolidation_max_sources or any(
                p is None or p.id in gone or p.id not in mergeable for p in parts) or len({mergeable[s] for s in sources}) > 1:
            dropped.append("merge whose sources are missing, taken, not in one shown group, or too few or many")
            continue
        if not isinstance(content, str) or not content.strip() or len(content) > MAX_FACT_CHARS:
            dropped.append("merge without usable content")
            continue
        newest = max(parts, key=lambda p: p.created_at)
        proposed = _confidence(merge.get("confidence"))
        floor = min(p.confidence for p in parts)  # a merge never raises confidence
        category = merge.get("category") if merge.get("category") in CATEGORIES else newest.category
        # Reviewed when its most volatile source would have been, and not later than a new
        # fact could be: a merge must not lift a short-lived detail out of review.
        due = max(min(_review_date(p, cfg) for p in parts), at + dt.timedelta(days=1))
        merged = Fact(id=new_fact_id(), content=content.strip(), category=category,
                      confidence=floor if proposed is None else min(proposed, floor), created_at=newest.created_at,
                      last_confirmed_at=max((p.last_confirmed_at for p in parts if p.last_confirmed_at), default=None),
                      valid_until=min(due, newest.created_at + dt.timedelta(days=creation_cap)),
                      source_kind=newest.source_kind, source_thread_id=newest.source_thread_id,
                      source_run_id=newest.source_run_id, source_message_id=newest.source_message_id)
        gone.update(p.id for p in parts)
        new_facts.append(merged)
        out.merged.append(merged.id)

    job_of = {m.get("id"): j for j in jobs for m in j.messages if m.get("id")}
    latest = jobs[-1]
    user_ids = [m.get("id") for m in latest.messages if m.get("role") == "user" and m.get("id")]
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
        days = _days(item.get("validDays"), creation_cap)
        named = item.get("messageId")
        source, mid = (job_of[named], named) if isinstance(named, str) and named in job_of else (latest, user_ids[-1] if user_ids else "")
        fact = Fact(id=new_fact_id(), content=content, category=item.get("category") if item.get("category") in CATEGORIES else "context",
                    confidence=confidence, created_at=at, last_confirmed_at=at,
                    valid_until=at + dt.timedelta(days=days) if days else None,
                    source_thread_id=source.thread_id, source_run_id=source.run_id, source_message_id=mid or "")
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


def run_update(store: MemoryStore, model: Any, jobs: UpdateJob | Sequence[UpdateJob], cfg: MemoryConfig) -> UpdateOutcome:
    """Load, one model call, apply, save (retrying on a revision conflict); *cfg* is the
    ``memory`` section (threshold, caps, staleness and consolidation knobs). *jobs* is one
    job or a batch of one owner's and agent's, in the order they were queued."""
    jobs = [j for j in _batch(jobs) if j.messages] or _batch(jobs)
    job, threads = jobs[-1], ", ".join(j.thread_id for j in jobs)
    doc = store.load(job.owner, job.agent)
    if doc.paused:
        return UpdateOutcome(skipped="paused")
    if not job.messages:
        return UpdateOutcome(skipped="nothing to learn from")
    at = now()
    reply = model.invoke(build_messages(doc, jobs, at, cfg))
    spent = {"model_name": str((getattr(model, "metadata", None) or {}).get("deerflow_model_name") or getattr(model, "model_name", "") or ""),
             "usage": dict(getattr(reply, "usage_metadata", None) or {})}
    text = reply.content if isinstance(reply.content, str) else "".join(
        b.get("text", "") for b in reply.content if isinstance(b, dict))
    data = parse_reply(text)
    if data is None:
        logger.warning("memory update for thread %s ignored: the model's reply is not a JSON object", threads)
        return UpdateOutcome(skipped="invalid reply", **spent)
    for _ in range(SAVE_ATTEMPTS):
        outcome = apply_changes(doc, data, jobs, cfg, at=at)
        try:
            store.save(doc)
            break
        except RevisionConflict:
            doc = store.load(job.owner, job.agent)
            if doc.paused:
                return UpdateOutcome(skipped="paused")
    else:
        raise RevisionConflict(f"memory of thread {threads}: {SAVE_ATTEMPTS} conflicting saves in a row")
    if outcome.dropped:
        logger.warning("memory update for thread %s clamped: %s", threads, "; ".join(outcome.dropped))
    outcome.model_name, outcome.usage = spent["model_name"], spent["usage"]
    return outcome
