"""The full-text index over ThreadSearchText.body, in the database's own engine.

SQLite: an FTS5 table with ``content=`` pointing at the rows (no second copy of the text)
and triggers that keep it in step with inserts, updates and deletes, cascades included.
PostgreSQL: a GIN index on ``to_tsvector('simple', body)``; the 'simple' configuration
(no stemming, no stop words) treats every language alike, as the FTS5 tokenizer does.
Other backends get no index and search falls back to a substring match.
"""

from django.db import migrations

SQLITE_UP = [
    "CREATE VIRTUAL TABLE threads_search_fts USING fts5(body, content='threads_threadsearchtext', content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER threads_search_fts_ai AFTER INSERT ON threads_threadsearchtext BEGIN "
    "INSERT INTO threads_search_fts(rowid, body) VALUES (new.id, new.body); END",
    "CREATE TRIGGER threads_search_fts_ad AFTER DELETE ON threads_threadsearchtext BEGIN "
    "INSERT INTO threads_search_fts(threads_search_fts, rowid, body) VALUES ('delete', old.id, old.body); END",
    "CREATE TRIGGER threads_search_fts_au AFTER UPDATE ON threads_threadsearchtext BEGIN "
    "INSERT INTO threads_search_fts(threads_search_fts, rowid, body) VALUES ('delete', old.id, old.body); "
    "INSERT INTO threads_search_fts(rowid, body) VALUES (new.id, new.body); END",
    # rows written before this migration (none in practice) join the index
    "INSERT INTO threads_search_fts(threads_search_fts) VALUES ('rebuild')",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS threads_search_fts_au",
    "DROP TRIGGER IF EXISTS threads_search_fts_ad",
    "DROP TRIGGER IF EXISTS threads_search_fts_ai",
    "DROP TABLE IF EXISTS threads_search_fts",
]
POSTGRES_UP = ["CREATE INDEX thread_search_body_fts ON threads_threadsearchtext USING gin (to_tsvector('simple', body))"]
POSTGRES_DOWN = ["DROP INDEX IF EXISTS thread_search_body_fts"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        with schema_editor.connection.cursor() as cursor:
            for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
                cursor.execute(sql)
    return run


class Migration(migrations.Migration):
    dependencies = [
        ("threads", "0002_thread_pins_and_search_text"),
    ]

    operations = [
        migrations.RunPython(_run({"sqlite": SQLITE_UP, "postgresql": POSTGRES_UP}),
                             _run({"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN})),
    ]
