"""Statements on the run path with their SQL built once per database connection.

Building a query through the ORM costs far more than running it: ``Thread.objects.get(pk=…,
owner_id=…)`` took 350 µs here, the same SELECT as prepared SQL 35 µs, and every thread route
and every run's admission make one; a run's admission and finish make six writes more. The
SQL comes from the model's metadata and the values go through the field methods the ORM itself
applies (``pre_save``, ``get_db_prep_save``, the row converters), so rows are written and read
exactly as a QuerySet would, and instances are the ORM's own (``Model.from_db``).

None of these send model signals: none of the models they are used for has receivers, and
``QuerySet.update``, which the updates replace, sends none either.
"""

from __future__ import annotations

import weakref
from typing import Any

from django.db import connections, router
from django.db.models import AutoField, CharField, Field, ForeignKey, Model, TextField


def row_converters(connection, fields) -> list[tuple[int, list, Any]]:
    """(position, converter functions, column) for the fields whose database values need
    converting (JSON text, SQLite's datetimes, ...), as the ORM's compiler finds them."""
    converters = []
    for index, field in enumerate(fields):
        column = field.get_col(field.model._meta.db_table)
        functions = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if functions:
            converters.append((index, functions, column))
    return converters


def convert_row(connection, row, converters) -> list:
    values = list(row)
    for index, functions, column in converters:
        for convert in functions:
            values[index] = convert(values[index], column, connection)
    return values


class PerConnection:
    """SQL that ``build(connection)`` writes once per database connection (quoting and column
    names are the backend's), for a statement none of the classes below describes."""

    def __init__(self, build):
        self.build = build
        self._prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # per connection object

    def __call__(self, connection) -> str:
        sql = self._prepared.get(connection)
        if sql is None:
            sql = self._prepared[connection] = self.build(connection)
        return sql


class ModelLookup:
    """The row of ``model`` whose ``where`` fields equal the values given, as a model instance.

    Values are passed to the database as they are: only for fields whose Python values are
    what the database stores (strings, integers), not ones the ORM would prepare (UUIDs,
    dates, JSON).
    """

    def __init__(self, model, *where: str):
        self.model = model
        self.where = where
        self._prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # per connection object

    def _for(self, connection) -> tuple[str, list[str], list]:
        prepared = self._prepared.get(connection)
        if prepared is None:
            meta = self.model._meta
            quote = connection.ops.quote_name
            fields = list(meta.concrete_fields)
            columns = ", ".join(quote(f.column) for f in fields)
            conditions = " AND ".join(f"{quote(meta.get_field(name).column)} = %s" for name in self.where)
            sql = f"SELECT {columns} FROM {quote(meta.db_table)} WHERE {conditions}"
            prepared = self._prepared[connection] = (sql, [f.attname for f in fields], row_converters(connection, fields))
        return prepared

    def first(self, *values: Any):
        if len(values) != len(self.where):
            raise TypeError(f"{self.model.__name__} lookup takes {len(self.where)} values ({', '.join(self.where)})")
        connection = connections[router.db_for_read(self.model)]
        sql, names, converters = self._for(connection)
        with connection.cursor() as cursor:
            cursor.execute(sql, list(values))
            row = cursor.fetchone()
        if row is None:
            return None
        return self.model.from_db(connection.alias, names, convert_row(connection, row, converters))


class ModelInsert:
    """INSERT of whole rows of ``model`` (every concrete field), as ``Model.objects.create``
    and ``bulk_create`` write them: defaults from the constructor, ``auto_now_add`` and the
    like through ``pre_save``. A primary key the database makes (an ``AutoField``) is not read
    back: those instances keep ``pk`` None, so use this only for rows nobody needs the id of
    (journal rows) or for models whose key comes from Python."""

    def __init__(self, model):
        self.model = model
        self.fields = [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, AutoField))]
        self._text = [_stores_text_as_is(f) for f in self.fields]
        self._prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _sql(self, connection) -> str:
        sql = self._prepared.get(connection)
        if sql is None:
            quote = connection.ops.quote_name
            columns = ", ".join(quote(f.column) for f in self.fields)
            marks = ", ".join(["%s"] * len(self.fields))
            sql = self._prepared[connection] = f"INSERT INTO {quote(self.model._meta.db_table)} ({columns}) VALUES ({marks})"
        return sql

    def _row(self, obj, connection) -> list:
        row = []
        for field, text in zip(self.fields, self._text):
            if text:
                value = getattr(obj, field.attname)
                if value is None or type(value) is str:
                    row.append(value)
                    continue
            row.append(field.get_db_prep_save(field.pre_save(obj, True), connection))
        return row

    def save(self, *instances) -> None:
        """Insert unsaved instances; they are saved instances afterwards, as after ``create``."""
        if not instances:
            return
        alias = router.db_for_write(self.model)
        connection = connections[alias]
        rows = [self._row(obj, connection) for obj in instances]
        with connection.cursor() as cursor:
            if len(rows) == 1:
                cursor.execute(self._sql(connection), rows[0])
            else:
                cursor.executemany(self._sql(connection), rows)
        for obj in instances:
            obj._state.adding = False
            obj._state.db = alias

    def create(self, **values):
        instance = self.model(**values)
        self.save(instance)
        return instance


def _stores_text_as_is(field) -> bool:
    """Whether the ORM writes a ``str`` (or None) of this field unchanged: a plain CharField or
    TextField, or a key to one. A run writes some twenty rows of these, and the four field
    methods per value that confirm it were a sixth of the ORM calls a run makes."""
    if isinstance(field, ForeignKey):
        field = field.target_field
    return type(field) in (CharField, TextField) and type(field).pre_save is Field.pre_save


class ModelUpdate:
    """``Model.objects.filter(<where> = …).update(**values)`` with the SQL of each set of
    columns built once. ``auto_now`` fields are not touched unless given, as with
    ``QuerySet.update``."""

    def __init__(self, model, *where: str):
        self.model = model
        self.where = where or ("pk",)
        self._prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _for(self, connection, names: tuple[str, ...]) -> tuple[str, list, list]:
        per_connection = self._prepared.get(connection)
        if per_connection is None:
            per_connection = self._prepared[connection] = {}
        prepared = per_connection.get(names)
        if prepared is None:
            meta = self.model._meta
            quote = connection.ops.quote_name
            fields = [meta.get_field(name) for name in names]
            where = [meta.pk if name == "pk" else meta.get_field(name) for name in self.where]
            assignments = ", ".join(f"{quote(f.column)} = %s" for f in fields)
            conditions = " AND ".join(f"{quote(f.column)} = %s" for f in where)
            sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {conditions}"
            prepared = per_connection[names] = (sql, fields, where)
        return prepared

    def __call__(self, *where_values: Any, **values: Any) -> int:
        """The number of rows updated."""
        if len(where_values) != len(self.where):
            raise TypeError(f"{self.model.__name__} update takes {len(self.where)} values ({', '.join(self.where)})")
        if not values:
            raise TypeError(f"{self.model.__name__} update: nothing to set")
        connection = connections[router.db_for_write(self.model)]
        sql, fields, where = self._for(connection, tuple(values))
        params = [f.get_db_prep_save(_column_value(f, values), connection) for f in fields]
        params += [f.get_db_prep_value(v, connection) for f, v in zip(where, where_values)]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.rowcount


def _column_value(field, values: dict) -> Any:
    """The value given for ``field``, by its name or its column's (``thread`` or ``thread_id``);
    a related instance stands for its key, as with ``QuerySet.update``."""
    value = values[field.name] if field.name in values else values[field.attname]
    if field.is_relation and isinstance(value, Model):
        value = getattr(value, field.target_field.attname)
    return value


class ModelMax:
    """``Max(field)`` of the rows of ``model`` whose ``where`` fields equal the values given
    (None when there are none), read on the connection ``model`` is written through, so
    inside a transaction it sees the transaction's rows."""

    def __init__(self, model, field: str, *where: str):
        self.model = model
        self.field = field
        self.where = where
        self._prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __call__(self, *values: Any) -> Any:
        connection = connections[router.db_for_write(self.model)]
        prepared = self._prepared.get(connection)
        if prepared is None:
            meta = self.model._meta
            quote = connection.ops.quote_name
            where = [meta.get_field(name) for name in self.where]
            conditions = " AND ".join(f"{quote(f.column)} = %s" for f in where)
            sql = f"SELECT MAX({quote(meta.get_field(self.field).column)}) FROM {quote(meta.db_table)} WHERE {conditions}"
            prepared = self._prepared[connection] = (sql, where)
        sql, where = prepared
        with connection.cursor() as cursor:
            cursor.execute(sql, [f.get_db_prep_value(v, connection) for f, v in zip(where, values)])
            return cursor.fetchone()[0]
