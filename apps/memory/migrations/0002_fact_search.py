"""Full-text retrieval of facts: SQLite FTS5 kept in step by triggers; a GIN index on PostgreSQL."""

from django.db import migrations

SQLITE = [
    "CREATE VIRTUAL TABLE memory_fact_fts USING fts5(content, content='memory_memoryfact', content_rowid='id')",
    "CREATE TRIGGER memory_fact_fts_ai AFTER INSERT ON memory_memoryfact BEGIN "
    "INSERT INTO memory_fact_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER memory_fact_fts_ad AFTER DELETE ON memory_memoryfact BEGIN "
    "INSERT INTO memory_fact_fts(memory_fact_fts, rowid, content) VALUES ('delete', old.id, old.content); END",
    "CREATE TRIGGER memory_fact_fts_au AFTER UPDATE OF content ON memory_memoryfact BEGIN "
    "INSERT INTO memory_fact_fts(memory_fact_fts, rowid, content) VALUES ('delete', old.id, old.content); "
    "INSERT INTO memory_fact_fts(rowid, content) VALUES (new.id, new.content); END",
]
SQLITE_DROP = ["DROP TRIGGER IF EXISTS memory_fact_fts_au", "DROP TRIGGER IF EXISTS memory_fact_fts_ad",
               "DROP TRIGGER IF EXISTS memory_fact_fts_ai", "DROP TABLE IF EXISTS memory_fact_fts"]
POSTGRES = ["CREATE INDEX memory_fact_tsv_idx ON memory_memoryfact USING gin (to_tsvector('simple', content))"]
POSTGRES_DROP = ["DROP INDEX IF EXISTS memory_fact_tsv_idx"]


def _run(statements):
    def apply(apps, schema_editor):
        vendor = schema_editor.connection.vendor
        for sql in statements.get(vendor, ()):
            schema_editor.execute(sql)
    return apply


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [
        migrations.RunPython(_run({"sqlite": SQLITE, "postgresql": POSTGRES}),
                             _run({"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP})),
    ]
