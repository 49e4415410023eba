"""Keeping a Python server process on one CPU.

A CPython process runs Python on one core at a time (the GIL), however many threads it has.
Left to the scheduler, its threads (event loops, request threads, database threads) spread over
the cores, and every hand-over of the GIL becomes a wake-up on another core: on the 2-core test
VM, 250 context switches and 9 ms of kernel time per run in a burst. On one core the same work
took 45 switches and 3 ms, and the burst ran 30 % faster (docs/deployment.md, "CPU pinning").

Processes on one host share out the cores through lock files: each takes a core whose file it
can lock and holds it for its life (the kernel drops the lock when it exits). One that
finds every core taken stays unpinned rather than double up on a core. Child processes (sandbox
commands) are started with the process's original set of cores.
"""

from __future__ import annotations

import contextlib
import os
import random
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]

_state_lock = threading.Lock()
_pinned: int | None = None
_original: set[int] = set()
_lock_fd: int | None = None


def supported() -> bool:
    return fcntl is not None and hasattr(os, "sched_setaffinity") and os.path.isdir("/proc/self/task")


def default_lock_dir() -> Path:
    """Host-wide, so every DeerFlow process of this user takes part whatever its home."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"deerflow-cpus-{uid}"


def pin_to_one_cpu(lock_dir: Path | None = None) -> int | None:
    """Move every thread of this process (and the threads it starts later) to one free core.

    Returns the core, or None when the process stays as it was: pinning unsupported, a
    single allowed core, every core taken by another process, or already pinned.
    """
    global _pinned, _lock_fd
    if not supported():
        return None
    with _state_lock:
        if _pinned is not None:
            return None
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) < 2:
            return None
        lock_dir = lock_dir or default_lock_dir()
        try:
            lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            return None
        # From a random core on: processes that do not share the folder (containers with
        # their own /tmp on one host) then spread out instead of all taking the first core.
        start = random.randrange(len(allowed))
        for cpu in allowed[start:] + allowed[:start]:
            try:
                fd = os.open(lock_dir / f"cpu-{cpu}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            except OSError:
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            try:
                os.sched_setaffinity(0, {cpu})
            except OSError:  # the core went away meanwhile (a cpuset changed): stay as we are
                os.close(fd)
                return None
            _set_other_threads({cpu})
            _original.clear()
            _original.update(allowed)
            _pinned, _lock_fd = cpu, fd
            return cpu
    return None


def _set_other_threads(cpus: set[int]) -> None:
    # sched_setaffinity applies to one thread; threads started later inherit their creator's.
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), cpus)


@contextlib.contextmanager
def original_cpus_for_children() -> Iterator[None]:
    """Around starting a child process: a child inherits the affinity of the thread that
    forks it, so this thread widens to the original cores until the child has started,
    and a sandbox command is not confined to the server's core."""
    cpu = _pinned
    if cpu is None:
        yield
        return
    try:
        os.sched_setaffinity(0, _original)
        widened = True
    except OSError:  # some of the original cores are gone: the child gets what this thread has
        widened = False
    try:
        yield
    finally:
        if widened:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, {cpu})


def _after_fork_in_child() -> None:
    # A forked child is another process: it gives back the parent's lock (its copy of the
    # descriptor would keep the core taken after the parent exits) and its own core.
    global _pinned, _lock_fd, _state_lock
    _state_lock = threading.Lock()
    if _lock_fd is not None:
        with contextlib.suppress(OSError):
            os.close(_lock_fd)
    if _pinned is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, _original)
    _pinned = _lock_fd = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
