"""A cross-process queue for SQLite writers.

SQLite lets one connection write at a time. A writer that finds the file locked sleeps in
SQLite's busy handler (1, 2, 5 … up to 100 ms between tries) and is not woken when the
lock frees, so with two processes writing, each spends much of a burst asleep while the
other has long finished. Taking an exclusive ``flock`` on a file beside the database
before writing makes the kernel queue the writers and wake the next one the moment the
previous one is done; SQLite's own locking still decides, this only orders the attempts.
Where ``flock`` does not exist (Windows) writers fall back to SQLite's busy handler.
"""

from __future__ import annotations

import os

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]


class WriteLock:
    """One per connection: flock locks belong to an open file, so two connections of one
    process queue for each other like connections of different processes do."""

    def __init__(self, database_path: str):
        self.path = f"{database_path}-writelock"
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        self.held = False

    def acquire(self) -> None:
        if not self.held:
            fcntl.flock(self._fd, fcntl.LOCK_EX)  # releases the GIL while it waits
            self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self.release()
        os.close(self._fd)


def lockable(database_path: str) -> bool:
    """A file on disk; in-memory databases have one connection or one process."""
    return fcntl is not None and bool(database_path) and database_path != ":memory:" and not database_path.startswith("file:") and "mode=memory" not in database_path
