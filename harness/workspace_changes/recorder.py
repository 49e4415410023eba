"""Before and after a run: the thread's snapshot, and the change record and receipt from it.

The snapshots of recently run threads stay in memory (``SnapshotCache``), so the next run's
pre-run snapshot re-reads only files touched since: a thread with thousands of files costs one
stat walk per snapshot. The cache is an optimisation only; a process without it (another Celery
worker) reads what it needs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from harness.config.paths import thread_user_data_dir
from harness.sandbox.paths import OUTPUTS, WORKSPACE
from harness.workspace_changes import delivery
from harness.workspace_changes.diff import compare, describe, has_changes, produced_output_paths
from harness.workspace_changes.scanner import scan
from harness.workspace_changes.types import Limits, Root, Snapshot


def thread_roots(user_id: str | int, thread_id: str) -> list[Root]:
    """The two directories a run's changes are looked for in. Uploads are the user's, not the
    run's, and are left out."""
    base = Path(thread_user_data_dir(user_id, thread_id))
    return [Root("workspace", base / "workspace", WORKSPACE), Root("outputs", base / "outputs", OUTPUTS)]


class SnapshotCache:
    """The last snapshot of each of the ``size`` most recently run threads."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], Snapshot] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Snapshot | None:
        with self._lock:
            snap = self._items.get(key)
            if snap is not None:
                self._items.move_to_end(key)
            return snap

    def put(self, key: tuple[str, str], snap: Snapshot) -> None:
        with self._lock:
            self._items[key] = snap
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def snapshot_before(roots: list[Root], *, cache: SnapshotCache | None = None, key: tuple[str, str] | None = None,
                    limits: Limits | None = None) -> Snapshot:
    """Blocking: call on a worker thread."""
    previous = cache.get(key) if cache is not None and key is not None else None
    return scan(roots, limits=limits, previous=previous, keep_text=True)


def settle(roots: list[Root], before: Snapshot, *, presented: list[str], cache: SnapshotCache | None = None,
           key: tuple[str, str] | None = None, limits: Limits | None = None) -> tuple[dict | None, dict]:
    """Blocking: call on a worker thread. (``workspace_changes`` payload, or None when nothing
    changed; ``run.delivery`` content)."""
    after = scan(roots, limits=limits, previous=before, keep_text=False)
    if cache is not None and key is not None:
        cache.put(key, after)
    payload = compare(before, after, limits=limits)
    content = delivery.receipt(presented=presented, produced=produced_output_paths(before, after))
    return (payload if has_changes(payload) else None), content


__all__ = ["SnapshotCache", "describe", "settle", "snapshot_before", "thread_roots"]
