"""Full-text search over the run journal's message events, in the database's own engine.

The journal (runs_runevent) already holds every user and assistant message, so search needs
no second copy written by the run path:

- SQLite: an FTS5 table whose external content is a view over the journal's message text
  (no duplicate text), filled lazily by the search itself up to a high-water mark kept in
  threads_search_state — a run does no extra work at all.
- PostgreSQL: a partial GIN index on ``to_tsvector('simple', content->>'content')`` of the
  journal's message rows, kept by the database as rows are inserted. The 'simple'
  configuration (no stemming, no stop words) treats every language alike, as FTS5's
  unicode61 tokenizer does.
"""

from django.db import migrations

MESSAGE_TYPES = "('llm.human.input', 'llm.ai.response')"

SQLITE_UP = [
    "CREATE VIEW threads_search_source AS SELECT id, thread_id, json_extract(content, '$.content') AS body "
    f"FROM runs_runevent WHERE category = 'message' AND event_type IN {MESSAGE_TYPES} "
    "AND json_extract(content, '$.additional_kwargs.deerflow_internal') IS NULL",
    "CREATE VIRTUAL TABLE threads_search_fts USING fts5(body, content='threads_search_source', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2')",
    "CREATE TABLE threads_search_state (id INTEGER PRIMARY KEY CHECK (id = 1), indexed_through INTEGER NOT NULL)",
    "INSERT INTO threads_search_state (id, indexed_through) VALUES (1, 0)",
]
SQLITE_DOWN = [
    "DROP TABLE IF EXISTS threads_search_state",
    "DROP TABLE IF EXISTS threads_search_fts",
    "DROP VIEW IF EXISTS threads_search_source",
]
POSTGRES_UP = [
    "CREATE INDEX run_event_message_fts ON runs_runevent USING gin (to_tsvector('simple', coalesce(content->>'content', ''))) "
    f"WHERE category = 'message' AND event_type IN {MESSAGE_TYPES}",
]
POSTGRES_DOWN = ["DROP INDEX IF EXISTS run_event_message_fts"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        with schema_editor.connection.cursor() as cursor:
            for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
                cursor.execute(sql)
    return run


class Migration(migrations.Migration):
    dependencies = [
        ("threads", "0002_thread_pinned_at"),
        ("runs", "0005_run_request_id"),
    ]

    operations = [
        migrations.RunPython(_run({"sqlite": SQLITE_UP, "postgresql": POSTGRES_UP}),
                             _run({"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN})),
    ]
