"""Disk quota on a thread's writable folders (workspace, uploads, outputs).

Two limits: one per thread (``sandbox.thread_quota_mb``) and one over all of a user's threads
(``sandbox.user_quota_mb``). Usage is what the files occupy on disk (allocated blocks, so a
``fallocate``d file counts and a sparse one counts what it really holds), hard links counted
once, directories included.

Enforcement without a filesystem of our own (which needs root and a loop device per thread):

- before a command, ``RLIMIT_FSIZE`` is set to the space left, so no single file can grow
  past the quota (the write fails with EFBIG / SIGXFSZ, ``fallocate`` included);
- while it runs, a watcher measures the tree and kills the command's process group as soon
  as the total is over the quota, which stops many files that are each under the cap;
- ``write_file``, ``str_replace`` and uploads check the space before they write.

The overshoot is therefore bounded by what the command can write between two measurements
(docs/sandbox.md gives the figures); files are never deleted for the user.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from harness.sandbox.errors import SandboxError

MIB = 1024 * 1024
# How long another thread's measured size is trusted when summing a user's usage: those
# threads are not the one writing now, and walking all of them on every command would cost
# more than the command.
_OTHER_THREADS_TTL = 30.0


def tree_usage(root: Path) -> int:
    """Bytes allocated on disk below ``root`` (symlinks not followed)."""
    total = 0
    seen: set[tuple[int, int]] = set()
    stack = [str(root)]
    while stack:
        current = stack.pop()
        try:
            entries = os.scandir(current)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_nlink > 1:
                    key = (info.st_dev, info.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                total += info.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return total


def human(size: int) -> str:
    if size < MIB:
        return f"{size / 1024:.0f} KiB"
    if size < 1024 * MIB:
        return f"{size / MIB:.1f} MiB"
    return f"{size / (1024 * MIB):.2f} GiB"


@dataclass(frozen=True)
class QuotaUsage:
    thread_bytes: int
    thread_limit: int  # 0: no limit
    user_bytes: int
    user_limit: int

    @property
    def remaining(self) -> int | None:
        """Bytes that may still be written, or None without any quota."""
        left = []
        if self.thread_limit:
            left.append(self.thread_limit - self.thread_bytes)
        if self.user_limit:
            left.append(self.user_limit - self.user_bytes)
        return max(0, min(left)) if left else None

    def tightest(self) -> str:
        """The quota with the least room left ("thread" or "user")."""
        thread_left = self.thread_limit - self.thread_bytes if self.thread_limit else None
        user_left = self.user_limit - self.user_bytes if self.user_limit else None
        if user_left is not None and (thread_left is None or user_left < thread_left):
            return "user"
        return "thread"

    def exceeded(self) -> str | None:
        """Which quota is over ("thread" or "user"), if any."""
        if self.thread_limit and self.thread_bytes > self.thread_limit:
            return "thread"
        if self.user_limit and self.user_bytes > self.user_limit:
            return "user"
        return None

    def as_dict(self) -> dict[str, int]:
        return {"thread_bytes": self.thread_bytes, "thread_limit": self.thread_limit,
                "user_bytes": self.user_bytes, "user_limit": self.user_limit}


def quota_message(usage: QuotaUsage, *, stopped: bool) -> str:
    which = usage.exceeded() or usage.tightest()
    if which == "thread":
        what = f"this thread's files reached the disk quota of {human(usage.thread_limit)} (sandbox.thread_quota_mb)"
        used = human(usage.thread_bytes)
    else:
        what = f"your files across all threads reached the disk quota of {human(usage.user_limit)} (sandbox.user_quota_mb)"
        used = human(usage.user_bytes)
    lead = "Error: the command was stopped because " if stopped else "Error: the disk quota is used up: "
    return (f"{lead}{what}; {used} is in use. Delete files you no longer need (e.g. `rm -r` build output or "
            "downloads under /mnt/user-data/workspace), or write smaller results, then try again.")


class QuotaExceeded(SandboxError):
    """A write that would take the thread or the user past the disk quota."""

    def __init__(self, usage: QuotaUsage, needed: int = 0):
        self.usage = usage
        extra = f" Writing {human(needed)} more would exceed it." if needed else ""
        super().__init__(quota_message(usage, stopped=False) + extra)


def quota_for(user_id: str | int, thread_id: str, config: object) -> ThreadQuota:
    """The quota of one thread from a ``SandboxConfig`` (for callers outside a sandbox: uploads)."""
    from harness.config.paths import thread_user_data_dir

    return ThreadQuota(thread_user_data_dir(user_id, thread_id),
                       thread_limit=int(getattr(config, "thread_quota_mb", 0) or 0) * MIB,
                       user_limit=int(getattr(config, "user_quota_mb", 0) or 0) * MIB)


class ThreadQuota:
    """Measures one thread's usage (and its user's) against the configured quotas."""

    def __init__(self, user_data_dir: Path, *, thread_limit: int, user_limit: int):
        self.user_data_dir = Path(user_data_dir)
        self.thread_limit = thread_limit
        self.user_limit = user_limit

    @property
    def enabled(self) -> bool:
        return bool(self.thread_limit or self.user_limit)

    def measure_thread(self) -> int:
        # Only the writable folders count; user-data itself holds nothing else.
        return sum(tree_usage(self.user_data_dir / name) for name in ("workspace", "uploads", "outputs"))

    def usage(self, thread_bytes: int | None = None) -> QuotaUsage:
        thread_bytes = self.measure_thread() if thread_bytes is None else thread_bytes
        others = _other_threads_usage(self.user_data_dir) if self.user_limit else 0
        return QuotaUsage(thread_bytes, self.thread_limit, thread_bytes + others, self.user_limit)

    def check_write(self, size: int) -> None:
        """Refuse a write of ``size`` new bytes that would go over a quota (size <= 0: frees space)."""
        if not self.enabled:
            return
        usage = self.usage()
        remaining = usage.remaining
        if remaining is not None and size > remaining:
            raise QuotaExceeded(usage, size)


# -- a user's other threads --------------------------------------------------------------

_others_lock = threading.Lock()
_others_cache: dict[Path, tuple[float, int]] = {}  # thread user-data dir -> (measured at, bytes)


def _other_threads_usage(user_data_dir: Path) -> int:
    """Summed usage of the user's other threads, each remeasured at most every TTL seconds."""
    threads_dir = user_data_dir.parent.parent  # users/{user}/threads
    now = time.monotonic()
    total = 0
    try:
        siblings = [Path(entry.path) / "user-data" for entry in os.scandir(threads_dir) if entry.is_dir()]
    except OSError:
        return 0
    for sibling in siblings:
        if sibling == user_data_dir:
            continue
        with _others_lock:
            cached = _others_cache.get(sibling)
        if cached is not None and now - cached[0] < _OTHER_THREADS_TTL:
            total += cached[1]
            continue
        size = sum(tree_usage(sibling / name) for name in ("workspace", "uploads", "outputs"))
        with _others_lock:
            _others_cache[sibling] = (now, size)
        total += size
    return total


def forget_measurements() -> None:
    """Drop cached sizes of other threads (tests, and after a bulk delete)."""
    with _others_lock:
        _others_cache.clear()
