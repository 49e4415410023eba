"""Per-(sandbox, path) write locks.

Two tool calls in one model turn can edit the same file in parallel (LangGraph runs tool
calls concurrently); without a lock a ``str_replace`` could read the file, lose the race
to a ``write_file`` and write back stale content. Keys include the sandbox id so threads
never wait on one another, and entries are dropped once nobody holds them so the table
stays as small as the number of writes in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_guard = threading.Lock()
_locks: dict[tuple[str, str], list] = {}  # key -> [lock, holders]


@contextmanager
def path_lock(sandbox_id: str, host_path: str) -> Iterator[None]:
    key = (sandbox_id, host_path)
    with _guard:
        entry = _locks.setdefault(key, [threading.Lock(), 0])
        entry[1] += 1
    try:
        with entry[0]:
            yield
    finally:
        with _guard:
            entry[1] -= 1
            if entry[1] == 0:
                _locks.pop(key, None)


def held_keys() -> int:
    """How many paths have a lock entry right now (for tests and diagnostics)."""
    with _guard:
        return len(_locks)
