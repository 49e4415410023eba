"""Reads: the memory text a run injects, and the owner's document."""

from __future__ import annotations

from django.db import connections, router

from apps.memory.models import MemoryFact
from apps.memory.stores import SUMMARY_FIELDS, DjangoMemoryStore, profile_of, search_fact_rows
from deerflow_site.db.prepared_sql import PerConnection
from harness.memory import MemoryDoc
from harness.memory.injection import Injection, render, token_counter

RELEVANT_LIMIT = 50
# Enough facts to fill any sensible budget; the rest are never read on the run's path.
CANDIDATE_LIMIT = 200


def _most_confident_sql(connection) -> str:
    meta = MemoryFact._meta
    quote = connection.ops.quote_name
    column = {name: quote(meta.get_field(name).column) for name in ("profile", "category", "content", "confidence", "created_at")}
    return (f"SELECT {quote(meta.pk.column)}, {column['category']}, {column['content']} FROM {quote(meta.db_table)} "
            f"WHERE {column['profile']} = %s ORDER BY {column['confidence']} DESC, {column['created_at']} DESC, "
            f"{quote(meta.pk.column)} DESC LIMIT %s")


# Every run with memory on reads these; the ORM spent ~550 Python calls building the query,
# more than the rest of the injection.
_most_confident = PerConnection(_most_confident_sql)


def _most_confident_facts(profile_id: int, skip: list[int]) -> list[tuple[str, str]]:
    """(category, content) of the profile's most confident facts, up to CANDIDATE_LIMIT of
    those not in *skip*: the rows past the limit are never read."""
    connection = connections[router.db_for_read(MemoryFact)]
    with connection.cursor() as cursor:
        cursor.execute(_most_confident(connection), [profile_id, CANDIDATE_LIMIT + len(skip)])
        rows = cursor.fetchall()
    skipped = set(skip)
    return [(category, content) for pk, category, content in rows if pk not in skipped][:CANDIDATE_LIMIT]


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
    ordered.extend(_most_confident_facts(profile.pk, relevant))
    return render({f: getattr(profile, f) for f in SUMMARY_FIELDS}, ordered, max_tokens, token_counter(token_counting))


def memory_get_for_user(*, user, agent: str = "") -> MemoryDoc:
    return DjangoMemoryStore().load(str(user.pk), agent)
