"""The harness's MemoryStore on the ORM (owners are user ids as strings)."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.memory.models import MemoryFact, MemoryProfile
from deerflow_site.db.prepared_sql import ModelLookup, ModelUpdate
from harness.config import get_app_config
from harness.memory import Fact, MemoryDoc, RevisionConflict
from harness.memory.retrieval import index_text, query_terms, substring_terms
from harness.memory.types import SUMMARY_KEYS

SUMMARY_FIELDS = [attr for attr, _, _ in SUMMARY_KEYS]
# Once per run (injection) and twice per memory update: the profile's row by its unique key,
# and the compare-and-set, as SQL built once per connection (the ORM's query building cost
# more than the queries).
profile_of = ModelLookup(MemoryProfile, "owner_id", "agent")
_update_profile_at = ModelUpdate(MemoryProfile, "owner_id", "agent", "revision")
FACT_FIELDS = ("fact_id", "content", "category", "confidence", "source_kind", "source_thread_id", "source_run_id",
               "source_message_id", "created_at", "last_confirmed_at", "valid_until", "revision")


def _fact(row: MemoryFact) -> Fact:
    return Fact(id=row.fact_id, content=row.content, category=row.category, confidence=row.confidence,
                created_at=row.created_at, last_confirmed_at=row.last_confirmed_at, valid_until=row.valid_until,
                source_kind=row.source_kind, source_thread_id=row.source_thread_id, source_run_id=row.source_run_id,
                source_message_id=row.source_message_id, revision=row.revision)


def _fact_values(fact: Fact) -> dict:
    return {"fact_id": fact.id, "content": fact.content, "category": fact.category, "confidence": fact.confidence,
            "source_kind": fact.source_kind, "source_thread_id": fact.source_thread_id, "source_run_id": fact.source_run_id,
            "source_message_id": fact.source_message_id, "created_at": fact.created_at,
            "last_confirmed_at": fact.last_confirmed_at, "valid_until": fact.valid_until, "revision": fact.revision,
            "search_text": index_text(fact.content)}


def search_fact_pks(profile_id: int, query: str, limit: int, adapter: str = "fts5") -> list[int]:
    """Primary keys of the profile's facts matching *query*, best first."""
    return [row[0] for row in search_fact_rows(profile_id, query, limit, adapter)]


def search_fact_rows(profile_id: int, query: str, limit: int, adapter: str = "fts5") -> list[tuple[int, str, str]]:
    """(pk, category, content) of the profile's facts matching *query*, best first, by
    ``memory.retrieval_adapter`` *adapter*: full text over ``search_text`` (the content and its
    CJK bigrams, see harness/memory/retrieval.py), or substrings of the content when it is ""."""
    if adapter == "":
        return _substring_rows(profile_id, substring_terms(query), limit)
    terms = query_terms(query, adapter=adapter)
    if not terms:
        return []
    with connection.cursor() as cur:
        if connection.vendor == "sqlite":
            match = " OR ".join(f'"{t}"' for t in terms)
            cur.execute("SELECT f.id, f.category, f.content FROM memory_fact_fts JOIN memory_memoryfact f ON f.id = memory_fact_fts.rowid "
                        "WHERE memory_fact_fts MATCH %s AND f.profile_id = %s ORDER BY bm25(memory_fact_fts) LIMIT %s",
                        [match, profile_id, limit])
        elif connection.vendor == "postgresql":
            cur.execute("SELECT id, category, content FROM memory_memoryfact, to_tsquery('simple', %s) q "
                        "WHERE profile_id = %s AND to_tsvector('simple', search_text) @@ q "
                        "ORDER BY ts_rank(to_tsvector('simple', search_text), q) DESC, id LIMIT %s",
                        [" | ".join(terms), profile_id, limit])
        else:
            return _substring_rows(profile_id, substring_terms(query), limit)
        return [tuple(row) for row in cur.fetchall()]


def _substring_rows(profile_id: int, terms: list[str], limit: int) -> list[tuple[int, str, str]]:
    if not terms:
        return []
    match = Q()
    for term in terms:
        match |= Q(content__icontains=term)
    rows = MemoryFact.objects.filter(match, profile_id=profile_id).values_list("id", "category", "content")
    hits = [(sum(t in content.lower() for t in terms), pk, category, content) for pk, category, content in rows]
    return [(pk, category, content) for _, pk, category, content in sorted(hits, key=lambda h: (-h[0], h[1]))[:limit]]


class DjangoMemoryStore:
    def load(self, owner: str, agent: str = "") -> MemoryDoc:
        profile = profile_of.first(int(owner), agent)
        if profile is None:
            return MemoryDoc(owner=owner, agent=agent)
        doc = MemoryDoc(owner=owner, agent=agent, revision=profile.revision, paused=profile.paused, updated_at=profile.updated_at,
                        summaries={f: getattr(profile, f) for f in SUMMARY_FIELDS})
        doc.facts = [_fact(r) for r in profile.facts.order_by("created_at", "id")]
        return doc

    def save(self, doc: MemoryDoc) -> MemoryDoc:
        # Once per memory update: the queries are kept to what changed (an update that only
        # rewrites the summaries is the compare-and-set and one read of the facts).
        owner_id = int(doc.owner)
        with transaction.atomic():
            values = {f: doc.summaries.get(f, "") for f in SUMMARY_FIELDS}
            if doc.revision == 0:
                profile, created = MemoryProfile.objects.get_or_create(owner_id=owner_id, agent=doc.agent,
                                                                       defaults={**values, "revision": 1, "paused": doc.paused})
                if not created:
                    raise RevisionConflict("the profile was created meanwhile")
                profile_id, revision, updated_at = profile.pk, profile.revision, profile.updated_at
                stored = {}
            else:
                # The compare-and-set: only the writer that still holds the stored revision wins.
                updated_at, revision = timezone.now(), doc.revision + 1
                updated = _update_profile_at(owner_id, doc.agent, doc.revision,
                                             **values, paused=doc.paused, revision=revision, updated_at=updated_at)
                if not updated:
                    raise RevisionConflict(f"profile {doc.owner}/{doc.agent} changed since revision {doc.revision}")
                profile_id = None  # read only if a fact is new
                stored = {r.fact_id: r for r in MemoryFact.objects.filter(profile__owner_id=owner_id, profile__agent=doc.agent)}
            wanted = {f.id: f for f in doc.facts}
            gone = [row.pk for fid, row in stored.items() if fid not in wanted]
            if gone:
                MemoryFact.objects.filter(pk__in=gone).delete()
            new = []
            for fid, fact in wanted.items():
                row = stored.get(fid)
                if row is None:
                    new.append(MemoryFact(**_fact_values(fact)))
                elif any(getattr(row, k) != v for k, v in _fact_values(fact).items()):
                    MemoryFact.objects.filter(pk=row.pk).update(**_fact_values(fact))
            if new:
                if profile_id is None:
                    profile_id = MemoryProfile.objects.filter(owner_id=owner_id, agent=doc.agent).values_list("pk", flat=True).get()
                for row in new:
                    row.profile_id = profile_id
                MemoryFact.objects.bulk_create(new)
        saved = doc.copy()
        saved.revision, saved.updated_at = revision, updated_at
        return saved

    def search(self, owner: str, agent: str, query: str, limit: int, adapter: str | None = None) -> list[str]:
        profile_id = MemoryProfile.objects.filter(owner_id=int(owner), agent=agent).values_list("pk", flat=True).first()
        if profile_id is None:
            return []
        adapter = get_app_config().memory.retrieval_adapter if adapter is None else adapter
        pks = search_fact_pks(profile_id, query, limit, adapter)
        ids = dict(MemoryFact.objects.filter(pk__in=pks).values_list("pk", "fact_id"))
        return [ids[pk] for pk in pks if pk in ids]
