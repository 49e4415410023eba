"""A cross-process queue for SQLite writers.

SQLite lets one connection write at a time. A writer that finds the file locked sleeps in
SQLite's busy handler (1, 2, 5 … up to 100 ms between tries) and is not woken when the
lock frees, so with two processes writing, each spends much of a burst asleep while the
other has long finished. Here a writer first queues: behind the other writers of its process
on a thread lock, then behind the other processes on an exclusive ``flock`` of a file beside
the database, and the kernel wakes the next one the moment the previous one is done. SQLite's
own locking still decides; this only orders the attempts.
Where ``flock`` does not exist (Windows) writers fall back to SQLite's busy handler.

Part of the embedded default's multi-process machinery (deerflow_site/server/README.md), but
kept in the harness: its SQLite checkpointer (checkpointer.py) queues on it as the Django
backend (deerflow_site/db/sqlite_backend/) does, and the harness imports nothing from the site.
"""

from __future__ import annotations

import os
import sqlite3
import threading

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]


class _FileQueue:
    """A process's place in one database's queue: its writers take turns on ``threads``, and
    the one whose turn it is holds the file lock for the process."""

    def __init__(self, path: str):
        self.threads = threading.Lock()
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


_queues: dict[str, _FileQueue] = {}
_queues_guard = threading.Lock()


def _forget_queues_after_fork() -> None:
    # A child shares its parent's open file, and with it the parent's flock: it needs its own.
    global _queues_guard
    _queues.clear()
    _queues_guard = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_queues_after_fork)


class WriteLock:
    """One connection's handle on the queue of a database file.

    Waiting for the other writers of this process is bounded by ``timeout`` (the connection's
    busy timeout), after which ``acquire`` fails as SQLite would: "database is locked". The
    wait for other processes has no bound of its own: they only hold the lock for a write
    transaction, and the kernel releases it if they die.
    """

    def __init__(self, database_path: str, timeout: float = 20.0):
        self.path = f"{database_path}-writelock"
        self.timeout = timeout
        with _queues_guard:
            queue = _queues.get(self.path)
            if queue is None:
                queue = _queues[self.path] = _FileQueue(self.path)
        self._queue = queue
        self.held = False

    def acquire(self) -> None:
        if self.held:
            return
        if not self._queue.threads.acquire(timeout=self.timeout):
            raise sqlite3.OperationalError(f"database is locked: another writer in this process held it for {self.timeout:g} s")
        try:
            fcntl.flock(self._queue.fd, fcntl.LOCK_EX)  # releases the GIL while it waits
        except BaseException:
            self._queue.threads.release()
            raise
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                fcntl.flock(self._queue.fd, fcntl.LOCK_UN)
            finally:
                self._queue.threads.release()

    def close(self) -> None:
        self.release()


def lockable(database_path: str) -> bool:
    """A file on disk; in-memory databases have one connection or one process."""
    return fcntl is not None and bool(database_path) and database_path != ":memory:" and not database_path.startswith("file:") and "mode=memory" not in database_path
