"""The harness's KnowledgeStore on the ORM: full-text search over passages (SQLite FTS5 or
PostgreSQL ``to_tsvector``, the memory app's pattern), vector search when the passages have
embeddings, and the two fused by reciprocal rank.

Every call decides again which collections the scope may read (``readable_collection_ids``):
a share revoked, a chat detached or a collection deleted is out of the very next search.

Vectors are float32 blobs on the passage row, scored with numpy over the collections in reach.
sqlite-vec needs ``sqlite3.Connection.enable_load_extension``, which the Python this project
ships with is built without, and pgvector is an extension the operator's PostgreSQL may lack:
a blob column works on both databases, and the search reads only the rows in reach.
"""

from __future__ import annotations

import logging
import uuid

import numpy as np
from django.db import connection

from apps.knowledge.models import Collection, Passage
from apps.knowledge.selectors import readable_collection_ids
from harness.config import get_app_config
from harness.knowledge.chunking import fold
from harness.knowledge.embeddings import (
    EmbeddingError,
    embedder_for,
    embeddings_enabled,
)
from harness.knowledge.types import Passage as FoundPassage
from harness.knowledge.types import SearchScope
from harness.memory.retrieval import query_terms

logger = logging.getLogger(__name__)

CANDIDATES = 50  # hits taken from each ranking before fusing
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.); dampens the top ranks' lead


def _db_ids(ids: list[uuid.UUID]) -> list:
    field = Passage._meta.get_field("collection").target_field
    return [field.get_db_prep_value(i, connection) for i in ids]


# Words a question is made of that say nothing about its subject; matching them costs a ranking
# of nearly every passage and adds nothing to it.
STOPWORDS = frozenset("""a an and are as at be been but by can could did do does for from had has have how i if in into is it
its me my of on or our should so than that the their them then there these they this to was we were what when where which who
whom why will with would you your about after all also any before between both each few more most other over same some such
through under until very""".split())


def _terms(query: str, adapter: str) -> list[str]:
    terms = query_terms(query, adapter=adapter)
    meaningful = [t for t in terms if t not in STOPWORDS]
    return meaningful or terms


def _fulltext(ids: list, terms: list[str], joiner: str, limit: int, exclude: list[int]) -> list[int]:
    marks = ", ".join(["%s"] * len(ids))
    skip = f" AND p.id NOT IN ({', '.join(['%s'] * len(exclude))})" if exclude else ""
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute(
                "SELECT p.id FROM knowledge_passage p JOIN knowledge_document d ON d.id = p.document_id, to_tsquery('simple', %s) q "
                f"WHERE p.collection_id IN ({marks}) AND d.is_current AND p.search_tsv @@ q{skip} "
                "ORDER BY ts_rank(p.search_tsv, q) DESC, p.id LIMIT %s",
                [f" {'&' if joiner == 'AND' else '|'} ".join(terms), *ids, *exclude, limit])
        else:
            cur.execute(
                "SELECT p.id FROM knowledge_passage_fts f JOIN knowledge_passage p ON p.id = f.rowid "
                "JOIN knowledge_document d ON d.id = p.document_id "
                f"WHERE knowledge_passage_fts MATCH %s AND p.collection_id IN ({marks}) AND d.is_current{skip} "
                "ORDER BY bm25(knowledge_passage_fts), p.id LIMIT %s",
                [f" {joiner} ".join(f'"{t}"' for t in terms), *ids, *exclude, limit])
        return [row[0] for row in cur.fetchall()]


def _indexed(terms: list[str]) -> list[str]:
    """The terms some passage holds, in the query's order: a word no passage holds would only
    make every passage fail the all-words match. SQLite reads the index's vocabulary;
    PostgreSQL asks its GIN index once per term (an absent term is one index probe)."""
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute("SELECT t FROM unnest(%s::text[]) AS t WHERE EXISTS "
                        "(SELECT 1 FROM knowledge_passage WHERE search_tsv @@ to_tsquery('simple', quote_literal(t)))", [terms])
        else:  # FTS5's unicode61 indexes "café" as "cafe": look the folded form up
            folded = {t: fold(t) for t in terms}
            marks = ", ".join(["%s"] * len(folded))
            cur.execute(f"SELECT term FROM knowledge_passage_vocab WHERE term IN ({marks})", list(set(folded.values())))
            held = {row[0] for row in cur.fetchall()}
            return [t for t in terms if folded[t] in held]
        held = {row[0] for row in cur.fetchall()}
    return [t for t in terms if t in held]





def fulltext_ids(collection_ids: list[uuid.UUID], query: str, limit: int, adapter: str = "fts5", enough: int = 1) -> list[int]:
    """Passage ids matching *query* best first, in the current versions of these collections.

    Passages holding every term come first; only when fewer than *enough* do, passages holding
    any of them follow. Ranking every passage that holds one common word is what makes a
    search slow (bm25 per matching row), and passages with all the words rank first anyway."""
    terms = _terms(query, adapter)
    if not terms or not collection_ids:
        return []
    if connection.vendor == "postgresql":  # passages carry an accent-free copy (chunking.search_text)
        terms = list(dict.fromkeys(fold(t) for t in terms))
    if connection.vendor in ("sqlite", "postgresql"):
        terms = _indexed(terms)
        if not terms:
            return []
    ids = _db_ids(collection_ids)
    found = _fulltext(ids, terms, "AND", limit, []) if len(terms) > 1 else []
    if len(found) < enough or len(terms) == 1:
        found += _fulltext(ids, terms, "OR", limit - len(found), found)
    return found


def vector_ids(collection_ids: list[uuid.UUID], query_vector: list[float], limit: int) -> list[int]:
    """Passage ids nearest *query_vector* (cosine), in the current versions of these collections."""
    rows = list(Passage.objects.filter(collection_id__in=collection_ids, document__is_current=True, embedding__isnull=False)
                .values_list("id", "embedding"))
    if not rows:
        return []
    query = np.asarray(query_vector, dtype=np.float32)
    matrix = np.frombuffer(b"".join(bytes(blob) for _, blob in rows), dtype=np.float32)
    if matrix.size != len(rows) * query.size:  # vectors of another model or size: not comparable
        wanted = [(pk, blob) for pk, blob in rows if len(blob) == query.size * 4]
        if not wanted:
            return []
        rows = wanted
        matrix = np.frombuffer(b"".join(bytes(blob) for _, blob in rows), dtype=np.float32)
    scores = matrix.reshape(len(rows), query.size) @ query
    top = np.argsort(-scores)[:limit]
    return [rows[i][0] for i in top]


def fuse(*rankings: list[int], limit: int) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, pk in enumerate(ranking):
            scores[pk] = scores.get(pk, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(scores.items(), key=lambda item: -item[1])[:limit]


def _narrow(collection_ids: list[uuid.UUID], collection: str) -> list[uuid.UUID]:
    if not collection:
        return collection_ids
    wanted = collection.strip()
    rows = Collection.objects.filter(pk__in=collection_ids).values_list("pk", "name")
    return [pk for pk, name in rows if str(pk) == wanted or name.lower() == wanted.lower()]


def search_passages(collection_ids: list[uuid.UUID], query: str, limit: int) -> list[FoundPassage]:
    cfg = get_app_config().knowledge
    if not collection_ids or not query.strip():
        return []
    rankings = [fulltext_ids(collection_ids, query, CANDIDATES, cfg.retrieval_adapter, enough=limit)]
    if embeddings_enabled(cfg.embeddings) and Passage.objects.filter(collection_id__in=collection_ids, embedding__isnull=False).exists():
        try:
            vector = embedder_for(cfg.embeddings).embed([query])[0]
        except EmbeddingError as exc:  # full text still answers; the operator sees why in the log
            logger.warning("Knowledge search without vectors: %s", exc)
        else:
            rankings.append(vector_ids(collection_ids, vector, CANDIDATES))
    ranked = fuse(*rankings, limit=limit)
    if not ranked:
        return []
    with connection.cursor() as cur:  # one plain query: the ORM's compile cost as much as the search
        cur.execute("SELECT p.id, p.citation_id, p.document_id, p.text, p.section, p.page, d.title, d.name, c.name "
                    "FROM knowledge_passage p JOIN knowledge_document d ON d.id = p.document_id "
                    "JOIN knowledge_collection c ON c.id = p.collection_id "
                    f"WHERE p.id IN ({', '.join(['%s'] * len(ranked))})", [pk for pk, _ in ranked])
        rows = {row[0]: row for row in cur.fetchall()}
    found = []
    for pk, score in ranked:
        row = rows.get(pk)
        if row is not None:
            _, cid, document_id, text, section, page, title, name, collection_name = row
            found.append(FoundPassage(citation_id=cid, document_id=str(uuid.UUID(str(document_id))), document_title=title or name,
                                      collection_name=collection_name, text=text, section=section, page=page,
                                      score=round(score, 6), document_name=name))
    return found


class DjangoKnowledgeStore:
    def search(self, scope: SearchScope, query: str, limit: int, collection: str = "") -> list[FoundPassage]:
        ids = readable_collection_ids(user_id=int(scope.user_id), thread_id=scope.thread_id, agent_id=scope.agent_id)
        return search_passages(_narrow(ids, collection), query, limit)

    def collections(self, scope: SearchScope) -> list[dict]:
        ids = readable_collection_ids(user_id=int(scope.user_id), thread_id=scope.thread_id, agent_id=scope.agent_id)
        return [{"id": str(c.pk), "name": c.name, "description": c.description}
                for c in Collection.objects.filter(pk__in=ids).order_by("name")]
