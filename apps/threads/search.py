"""Thread search over message text: the index rows a run writes, and the query that reads them.

Runs write one ``ThreadSearchText`` row each, from the text the journal already collected
(``search_text_row``, called inside the run's finish transaction). Queries use the
database's own full-text engine: FTS5 on SQLite, ``tsvector`` on PostgreSQL (the index is
created by migration 0003). Every word of the query must match, each as a prefix, so the
sidebar finds "postgres" while the user is still typing "postg".
"""

from __future__ import annotations

import re

from django.db import connection

from apps.threads.models import ThreadSearchText

# What one run adds to the index at most: enough for the words users remember, bounded so a
# run that pastes a book does not make the index (and the finish transaction) heavy.
MAX_RUN_TEXT = 20_000
MAX_TERMS = 8
_TERM = re.compile(r"\w+", re.UNICODE)
_TAGS = re.compile(r"</?b>")


def search_terms(query: str) -> list[str]:
    """The query's words; punctuation and search-engine syntax are not passed through."""
    return _TERM.findall(query or "")[:MAX_TERMS]


def search_text_row(*, thread_id: str, owner_id: int, run_id: str, texts: list[str]) -> ThreadSearchText | None:
    """Index one run's message text. Called inside the run's finish transaction."""
    body = "\n".join(t for t in texts if t).strip()[:MAX_RUN_TEXT]
    if not body:
        return None
    return ThreadSearchText.objects.create(thread_id=thread_id, owner_id=owner_id, run_id=run_id, body=body)


def thread_text_matches(*, user, query: str, limit: int = 200) -> dict[str, str]:
    """{thread_id: snippet} for the caller's threads whose messages contain every query word
    (as a prefix), best match first. Empty when the query has no words."""
    terms = search_terms(query)
    if not terms:
        return {}
    vendor = connection.vendor
    if vendor == "sqlite":
        match = " ".join(f'"{t}"*' for t in terms)  # terms are \w only: no quote to escape
        sql = ("SELECT s.thread_id, snippet(threads_search_fts, 0, '', '', '…', 12) FROM threads_search_fts "
               "JOIN threads_threadsearchtext s ON s.id = threads_search_fts.rowid "
               "WHERE threads_search_fts MATCH %s AND s.owner_id = %s ORDER BY rank LIMIT %s")
        params = [match, user.pk, limit]
    elif vendor == "postgresql":
        tsquery = " & ".join(f"{t}:*" for t in terms)
        sql = ("SELECT s.thread_id, ts_headline('simple', s.body, q, 'MaxWords=14, MinWords=5, MaxFragments=1') "
               "FROM threads_threadsearchtext s, to_tsquery('simple', %s) q "
               "WHERE to_tsvector('simple', s.body) @@ q AND s.owner_id = %s "
               "ORDER BY ts_rank(to_tsvector('simple', s.body), q) DESC LIMIT %s")
        params = [tsquery, user.pk, limit]
    else:  # no full-text engine wired for this backend: a plain substring match
        qs = ThreadSearchText.objects.filter(owner_id=user.pk)
        for term in terms:
            qs = qs.filter(body__icontains=term)
        return {tid: body[:120] for tid, body in qs.values_list("thread_id", "body")[:limit]}
    found: dict[str, str] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for thread_id, snippet in cursor.fetchall():
            found.setdefault(thread_id, " ".join(_TAGS.sub("", snippet or "").split()))
    return found
