"""Thread search over message text, read from the run journal (runs_runevent).

The journal already stores every user and assistant message, so the run path writes
nothing for search. SQLite: an FTS5 index over a view of the journal's message text,
brought up to date by the search itself (``_catch_up``: only events newer than the last
search, usually none). PostgreSQL: a partial GIN index the database keeps as the journal
is written. Both are created by migration 0003. Every word of the query must match, each as
a prefix, so the sidebar finds "postgres" while the user is still typing "postg".

The journal keeps the answers a regenerate or an edit replaced; the history hides them
(``actions/visibility.py``) and so does the search: a word only they contain finds nothing.
"""

from __future__ import annotations

import logging
import re
import uuid

from django.db import DatabaseError, connection, transaction

from apps.runs.visibility import hidden_run_ids_of_threads

logger = logging.getLogger(__name__)

MAX_TERMS = 8
_TERM = re.compile(r"\w+", re.UNICODE)
_TAGS = re.compile(r"</?b>")


def search_terms(query: str) -> list[str]:
    """The query's words; punctuation and search-engine syntax are not passed through."""
    return _TERM.findall(query or "")[:MAX_TERMS]


def _catch_up() -> None:
    """Index the journal's events written since the last search (SQLite only).

    Journal ids only grow (AUTOINCREMENT), so a high-water mark is enough; a mark above the
    journal's newest id means the table was emptied and the index starts over. Deleted
    threads leave index entries behind that the search's join to the journal drops."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexed_through FROM threads_search_state WHERE id = 1")
        done = cursor.fetchone()[0]
        cursor.execute("SELECT coalesce(max(id), 0) FROM runs_runevent")
        newest = cursor.fetchone()[0]
    if newest == done:
        return
    start = done if newest > done else 0
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            # The mark first: a concurrent search that moved it already indexed these rows.
            cursor.execute("UPDATE threads_search_state SET indexed_through = %s WHERE id = 1 AND indexed_through = %s", [newest, done])
            if cursor.rowcount != 1:
                raise _Raced()
            if start == 0 and done:
                cursor.execute("INSERT INTO threads_search_fts(threads_search_fts) VALUES ('delete-all')")
            cursor.execute("INSERT INTO threads_search_fts(rowid, body) SELECT id, body FROM threads_search_source "
                           "WHERE id > %s AND id <= %s AND body IS NOT NULL", [start, newest])
    except (_Raced, DatabaseError) as exc:  # another search indexed the same events: use its work
        logger.debug("thread search catch-up skipped: %s", exc)


class _Raced(Exception):
    pass


def thread_text_matches(*, user, query: str, limit: int = 100) -> dict[str, str] | None:
    """{thread_id: snippet} for the caller's threads whose messages contain every query word
    (as a prefix), newest messages first. None when the query has no words (nothing to filter on).

    Newest first rather than by rank: the sidebar lists matches by activity anyway, and
    ranking every match of a common word cost more than the rest of the search."""
    terms = search_terms(query)
    if not terms:
        return None
    vendor = connection.vendor
    if vendor == "sqlite":
        _catch_up()
        match = " ".join(f'"{t}"*' for t in terms)  # terms are \w only: no quote to escape
        sql = ("SELECT e.thread_id, e.run_id, snippet(threads_search_fts, 0, '', '', '…', 12) FROM threads_search_fts "
               "JOIN runs_runevent e ON e.id = threads_search_fts.rowid JOIN threads_thread t ON t.id = e.thread_id "
               "WHERE threads_search_fts MATCH %s AND t.owner_id = %s ORDER BY threads_search_fts.rowid DESC LIMIT %s")
        params = [match, user.pk, limit]
    elif vendor == "postgresql":
        tsquery = " & ".join(f"{t}:*" for t in terms)
        sql = ("SELECT e.thread_id, e.run_id, ts_headline('simple', coalesce(e.content->>'content', ''), q, 'MaxWords=14, MinWords=5, MaxFragments=1') "
               "FROM runs_runevent e JOIN threads_thread t ON t.id = e.thread_id, to_tsquery('simple', %s) q "
               # the partial index's own predicate, spelled the same so the planner uses it
               "WHERE e.category = 'message' AND e.event_type IN ('llm.human.input', 'llm.ai.response') "
               "AND to_tsvector('simple', coalesce(e.content->>'content', '')) @@ q "
               "AND NOT coalesce(e.content->'additional_kwargs' ? 'deerflow_internal', false) "
               "AND t.owner_id = %s ORDER BY e.id DESC LIMIT %s")
        params = [tsquery, user.pk, limit]
    else:  # SQLite and PostgreSQL are the supported databases; elsewhere titles alone match
        return {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    hidden = {uuid.UUID(str(r)) for r in hidden_run_ids_of_threads(list({thread_id for thread_id, _, _ in rows}))} if rows else set()
    found: dict[str, str] = {}
    for thread_id, run_id, snippet in rows:
        if uuid.UUID(str(run_id)) not in hidden:
            found.setdefault(thread_id, " ".join(_TAGS.sub("", snippet or "").split()))
    return found
