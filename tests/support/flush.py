"""A transactional test's flush, without running every post_migrate handler again.

Django empties the database after each transactional test (``flush``), then emits
``post_migrate`` so that the rows migrations would have left come back: content types,
permissions, the default site. Those handlers cost about 0.3 s a flush, against a few
milliseconds for the flush itself, and the suite has a few hundred transactional tests.

Here the first flush in a process runs them for real and keeps the rows they made (after a
flush every other table is empty, so the rows found then are theirs alone); every later flush
puts the same rows back instead. A test therefore starts from the same database as before.
"""

from __future__ import annotations

from django.apps import apps
from django.db import connections, transaction

_rows: dict[str, list[tuple[str, list[str], list[tuple]]]] = {}


def _tables() -> list[str]:
    # Models in app order: content types come before the permissions that point at them.
    seen: list[str] = []
    for model in apps.get_models(include_auto_created=True):
        meta = model._meta
        if meta.managed and not meta.proxy and meta.db_table not in seen:
            seen.append(meta.db_table)
    return seen


def _snapshot(alias: str) -> list[tuple[str, list[str], list[tuple]]]:
    connection = connections[alias]
    existing = set(connection.introspection.table_names())
    kept = []
    with connection.cursor() as cursor:
        for table in _tables():
            if table not in existing:
                continue
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            rows = cursor.fetchall()
            if rows:
                kept.append((table, [column[0] for column in cursor.description], rows))
    return kept


def _restore(alias: str) -> None:
    connection = connections[alias]
    quote = connection.ops.quote_name
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        for table, columns, rows in _rows[alias]:
            placeholders = ", ".join(["%s"] * len(columns))
            cursor.executemany(f"INSERT INTO {quote(table)} ({', '.join(map(quote, columns))}) VALUES ({placeholders})", rows)


def restore_post_migrate_rows_on_flush() -> None:
    from django.contrib.contenttypes.models import ContentType
    from django.core.management.commands import flush

    emit_for_real = flush.emit_post_migrate_signal

    def emit_post_migrate_signal(verbosity, interactive, db, **kwargs):
        if db not in _rows:
            emit_for_real(verbosity, interactive, db, **kwargs)
            _rows[db] = _snapshot(db)
            return
        _restore(db)
        ContentType.objects.clear_cache()

    flush.emit_post_migrate_signal = emit_post_migrate_signal
