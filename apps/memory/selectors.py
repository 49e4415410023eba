"""Reads: the memory text a run injects, and the owner's document."""

from __future__ import annotations

from apps.memory.models import MemoryFact
from apps.memory.stores import SUMMARY_FIELDS, DjangoMemoryStore, profile_of, search_fact_rows
from harness.memory import MemoryDoc
from harness.memory.injection import Injection, render, token_counter

RELEVANT_LIMIT = 50
# Enough facts to fill any sensible budget; the rest are never read on the run's path.
CANDIDATE_LIMIT = 200


def memory_context(*, owner_id: int | str, agent: str, query: str, max_tokens: int, token_counting: str = "tiktoken",
                   retrieval_adapter: str = "fts5") -> Injection | None:
    """The ``<memory>`` block for a turn: summaries, then facts relevant to *query* (retrieval
    by *retrieval_adapter*), then the most confident others, while they fit in *max_tokens*
    counted by *token_counting*."""
    profile = profile_of.first(int(owner_id), agent)
    if profile is None or profile.paused:
        return None
    found = search_fact_rows(profile.pk, query, RELEVANT_LIMIT, retrieval_adapter) if query else []
    relevant = [pk for pk, _, _ in found]
    ordered = [(category, content) for _, category, content in found]
    others = (MemoryFact.objects.filter(profile_id=profile.pk).exclude(pk__in=relevant)
              .order_by("-confidence", "-created_at", "-pk").values_list("category", "content")[:CANDIDATE_LIMIT])
    ordered.extend(others)
    return render({f: getattr(profile, f) for f in SUMMARY_FIELDS}, ordered, max_tokens, token_counter(token_counting))


def memory_get_for_user(*, user, agent: str = "") -> MemoryDoc:
    return DjangoMemoryStore().load(str(user.pk), agent)
