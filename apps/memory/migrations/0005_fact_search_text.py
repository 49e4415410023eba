"""Retrieval indexes ``search_text`` (the content and its CJK bigrams) instead of the content,
so ``memory.retrieval_adapter: fts5_cjk`` finds Chinese and Japanese facts by a word inside a
sentence. Existing facts get their search text here and the index is rebuilt from it."""

from django.db import migrations, models

from harness.memory.retrieval import index_text

_SQLITE_DROP = ["DROP TRIGGER IF EXISTS memory_fact_fts_au", "DROP TRIGGER IF EXISTS memory_fact_fts_ad",
                "DROP TRIGGER IF EXISTS memory_fact_fts_ai", "DROP TABLE IF EXISTS memory_fact_fts"]


def _sqlite_index(column: str) -> list[str]:
    return [
        f"CREATE VIRTUAL TABLE memory_fact_fts USING fts5({column}, content='memory_memoryfact', content_rowid='id')",
        f"CREATE TRIGGER memory_fact_fts_ai AFTER INSERT ON memory_memoryfact BEGIN "
        f"INSERT INTO memory_fact_fts(rowid, {column}) VALUES (new.id, new.{column}); END",
        f"CREATE TRIGGER memory_fact_fts_ad AFTER DELETE ON memory_memoryfact BEGIN "
        f"INSERT INTO memory_fact_fts(memory_fact_fts, rowid, {column}) VALUES ('delete', old.id, old.{column}); END",
        f"CREATE TRIGGER memory_fact_fts_au AFTER UPDATE OF {column} ON memory_memoryfact BEGIN "
        f"INSERT INTO memory_fact_fts(memory_fact_fts, rowid, {column}) VALUES ('delete', old.id, old.{column}); "
        f"INSERT INTO memory_fact_fts(rowid, {column}) VALUES (new.id, new.{column}); END",
        "INSERT INTO memory_fact_fts(memory_fact_fts) VALUES ('rebuild')",
    ]


def _postgres_index(column: str) -> list[str]:
    return ["DROP INDEX IF EXISTS memory_fact_tsv_idx",
            f"CREATE INDEX memory_fact_tsv_idx ON memory_memoryfact USING gin (to_tsvector('simple', {column}))"]


def _reindex(column: str):
    def apply(apps, schema_editor):
        if column == "search_text":
            fact = apps.get_model("memory", "MemoryFact")
            for pk, content in fact.objects.values_list("pk", "content").iterator():
                fact.objects.filter(pk=pk).update(search_text=index_text(content))
        vendor = schema_editor.connection.vendor
        if vendor == "sqlite":
            for sql in _SQLITE_DROP + _sqlite_index(column):
                schema_editor.execute(sql)
        elif vendor == "postgresql":
            for sql in _postgres_index(column):
                schema_editor.execute(sql)
    return apply


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_pending_update")]

    # Going back, the triggers must leave search_text before the column goes; and should SQLite
    # drop the column by remaking the table (which drops its triggers), the first step makes
    # them again once it is gone.
    operations = [
        migrations.RunPython(migrations.RunPython.noop, _reindex("content")),
        migrations.AddField(model_name="memoryfact", name="search_text",
                            field=models.TextField(blank=True, default="", editable=False)),
        migrations.RunPython(_reindex("search_text"), _reindex("content")),
    ]
