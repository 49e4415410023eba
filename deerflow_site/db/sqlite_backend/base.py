"""Django's SQLite backend with DeerFlow's writers queued across processes.

Two changes, both about how long the database's one write lock is held:

- Writers take the queue lock of ``harness.runtime.sqlite_lock`` first, so a writer that
  finds the database busy is woken when it frees instead of sleeping in SQLite's busy
  handler.
- A transaction's ``BEGIN IMMEDIATE`` is sent with its first statement rather than when
  ``atomic()`` is entered. The ORM builds that statement's SQL before asking for the lock,
  and the work a caller does between entering the block and its first query is no longer
  done while every other writer waits.

A write outside a transaction holds the queue lock for that one statement.
"""

from __future__ import annotations

from django.db.backends.sqlite3 import base

from harness.runtime.sqlite_lock import WriteLock, lockable

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    wrapper: DatabaseWrapper

    def _run(self, method, query, args):
        wrapper = self.wrapper
        if wrapper.begin_pending:
            wrapper.begin_now()
        elif wrapper.write_lock is not None and not self.connection.in_transaction and query.lstrip()[:7].upper().startswith(_WRITES):
            wrapper.write_lock.acquire()
            try:
                return method(query, args)
            finally:
                wrapper.write_lock.release()
        return method(query, args)

    def execute(self, query, params=None):
        return self._run(super().execute, query, params)

    def executemany(self, query, param_list):
        return self._run(super().executemany, query, param_list)


class DatabaseWrapper(base.DatabaseWrapper):
    write_lock: WriteLock | None = None
    begin_pending = False

    def get_new_connection(self, conn_params):
        conn = super().get_new_connection(conn_params)
        self._close_write_lock()
        database = str(conn_params.get("database", ""))
        if lockable(database):
            self.write_lock = WriteLock(database, timeout=float(conn_params.get("timeout", 5.0)))
        return conn

    def create_cursor(self, name=None):
        cursor = self.connection.cursor(factory=SQLiteCursorWrapper)
        cursor.wrapper = self
        return cursor

    def _start_transaction_under_autocommit(self):
        self.begin_pending = True

    def begin_now(self) -> None:
        self.begin_pending = False
        if self.write_lock is not None:
            self.write_lock.acquire()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            if self.write_lock is not None:
                self.write_lock.release()
            raise

    def _commit(self):
        return self._end_transaction(super()._commit)

    def _rollback(self):
        return self._end_transaction(super()._rollback)

    def _end_transaction(self, end):
        if self.begin_pending:  # nothing ran: there is no transaction to end
            self.begin_pending = False
            return None
        try:
            return end()
        finally:
            if self.write_lock is not None:
                self.write_lock.release()

    def _close(self):
        self.begin_pending = False
        try:
            return super()._close()
        finally:
            self._close_write_lock()

    def _close_write_lock(self) -> None:
        if self.write_lock is not None:
            self.write_lock.close()
            self.write_lock = None
