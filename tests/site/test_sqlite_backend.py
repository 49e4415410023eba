"""The SQLite backend queues writers across connections and processes instead of leaving them
to SQLite's busy handler, and takes the database's write lock only once a transaction runs
its first statement."""

import fcntl
import os
import sqlite3
import threading

import pytest
from django.db import connection, transaction

from apps.threads.models import Thread

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="SQLite only")]


def _path() -> str:
    connection.ensure_connection()
    return str(connection.settings_dict["NAME"])


def _other_writer(path: str) -> sqlite3.Connection:
    """Another process's connection as SQLite alone would have it: its busy handler gives up
    after 50 ms, where Django's waits 20 s."""
    return sqlite3.connect(path, timeout=0.05, isolation_level=None)


def _queue_is_free(path: str) -> bool:
    fd = os.open(f"{path}-writelock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_a_writer_waits_its_turn_in_the_queue_instead_of_failing(user):
    from harness.runtime.sqlite_lock import WriteLock

    path = _path()
    opened, release, done = threading.Event(), threading.Event(), threading.Event()
    outcome: list[object] = []

    def long_transaction() -> None:
        try:
            with transaction.atomic():
                Thread.objects.create(owner=user, title="first")
                opened.set()
                release.wait(10)
        finally:
            connection.close()

    def queued_writer() -> None:
        lock, conn = WriteLock(path), _other_writer(path)
        try:
            lock.acquire()
            try:
                conn.execute("UPDATE threads_thread SET title = 'second' WHERE title = 'first'")
                outcome.append(conn.total_changes)
            finally:
                lock.release()
        except sqlite3.OperationalError as exc:
            outcome.append(exc)
        finally:
            conn.close()
            lock.close()
            done.set()

    holder = threading.Thread(target=long_transaction)
    holder.start()
    assert opened.wait(10)
    writer = threading.Thread(target=queued_writer)
    writer.start()
    # Far longer than the writer's busy timeout: without the queue it would have failed.
    assert not done.wait(0.5)
    release.set()
    holder.join(10)
    writer.join(10)
    assert outcome == [1]  # it ran after the commit, so it saw (and renamed) the first thread
    assert list(Thread.objects.values_list("title", flat=True)) == ["second"]


def test_a_transaction_takes_the_write_lock_with_its_first_statement(user):
    path = _path()
    other = _other_writer(path)
    try:
        with transaction.atomic():
            # Entered, nothing run yet: other writers are not held up.
            assert _queue_is_free(path)
            other.execute("UPDATE threads_thread SET title = 'x' WHERE 0")
            Thread.objects.create(owner=user, title="inside")
            assert not _queue_is_free(path)
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("UPDATE threads_thread SET title = 'x' WHERE 0")
        assert _queue_is_free(path)
        assert Thread.objects.filter(title="inside").exists()
    finally:
        other.close()


def test_a_rolled_back_transaction_writes_nothing_and_frees_the_queue(user):
    path = _path()
    with pytest.raises(RuntimeError), transaction.atomic():
        Thread.objects.create(owner=user, title="gone")
        with transaction.atomic():  # a savepoint inside the lazily begun transaction
            Thread.objects.create(owner=user, title="also gone")
        raise RuntimeError("rolled back")
    assert _queue_is_free(path)
    assert not Thread.objects.exists()
    with transaction.atomic():
        pass  # a block that runs no statement has nothing to commit
    assert _queue_is_free(path)


def test_a_write_outside_a_transaction_holds_the_queue_for_that_statement_only(user):
    path = _path()
    Thread.objects.create(owner=user, title="autocommit")
    assert _queue_is_free(path)
    assert Thread.objects.filter(title="autocommit").count() == 1


def test_a_writer_held_up_by_its_own_process_past_the_busy_timeout_is_told_the_database_is_locked(user):
    from harness.runtime.sqlite_lock import WriteLock

    path = _path()
    holder, waiter = WriteLock(path), WriteLock(path, timeout=0.2)
    holder.acquire()
    try:
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            waiter.acquire()
        assert not waiter.held
    finally:
        holder.release()
    waiter.acquire()  # its turn now
    waiter.release()


def test_a_forked_child_queues_behind_its_parent_instead_of_sharing_its_lock(user):
    from harness.runtime.sqlite_lock import WriteLock

    path = _path()
    parent = WriteLock(path)
    parent.acquire()
    try:
        child = os.fork()
        if child == 0:  # pragma: no cover - the child reports through its exit code
            try:
                fcntl.flock(WriteLock(path)._queue.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os._exit(1)  # it got the lock its parent holds
            except BlockingIOError:
                os._exit(0)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        parent.release()
