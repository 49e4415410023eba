"""Running one sandbox command under its limits: environment, rlimits, cgroups, disk quota.

Both built-in providers go through :func:`run_limited`; they differ only in the argv (plain
bash or bwrap) and in the environment overrides. Afterwards the result says, in words for
the model, which limit stopped or hampered the command, so "Killed" or a bare exit code 137
never reaches the model unexplained.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from harness.sandbox.env_policy import build_sandbox_env
from harness.sandbox.limits import (
    MIB, CommandGroup, ResourceLimits, cgroup_controllers, limit_prefix, make_preexec, user_task_count,
)
from harness.sandbox.process import CommandResult, run_command
from harness.sandbox.quota import QuotaUsage, ThreadQuota, quota_message

_SIGXFSZ_CODES = (-25, 128 + 25)  # killed by SIGXFSZ directly, or as reported by bash
_MEMORY_HINTS = ("MemoryError", "Cannot allocate memory", "cannot allocate memory", "std::bad_alloc",
                 "xmalloc: cannot allocate", "xrealloc: cannot allocate", "out of memory")
_PROCESS_HINTS = ("fork: retry: Resource temporarily unavailable", "fork: Resource temporarily unavailable",
                  "can't start new thread", "Resource temporarily unavailable")
_FILES_HINTS = ("Too many open files",)


@dataclass(frozen=True)
class CommandPolicy:
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    quota: ThreadQuota | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # sandbox.env
    env_passthrough: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: object, quota: ThreadQuota | None) -> CommandPolicy:
        return cls(
            limits=ResourceLimits.from_config(config),
            quota=quota,
            env=dict(getattr(config, "env", None) or {}),
            env_passthrough=tuple(getattr(config, "env_passthrough", None) or ()),
        )

    def environment(self, injected: Mapping[str, str] | None, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        return build_sandbox_env(injected, overrides=overrides, extra=self.env, passthrough=self.env_passthrough)


# RLIMIT_NPROC counts every task of the server's user, so without a pids cgroup the limit is
# set that many above what the user runs already; counting walks /proc, so it is cached.
_tasks_lock = threading.Lock()
_tasks_cache: tuple[float, int] = (0.0, 0)


def _current_user_tasks() -> int:
    global _tasks_cache
    if os.getuid() == 0:
        return 0  # the kernel ignores RLIMIT_NPROC for root anyway
    now = time.monotonic()
    with _tasks_lock:
        if now - _tasks_cache[0] < 10.0:
            return _tasks_cache[1]
    count = user_task_count()
    with _tasks_lock:
        _tasks_cache = (now, count)
    return count


def _hint(result: CommandResult, hints: tuple[str, ...]) -> bool:
    text = result.output.head + result.output.tail
    return any(h in text for h in hints)


def explain_limit(result: CommandResult, limits: ResourceLimits, hit: str | None, usage: QuotaUsage | None) -> str | None:
    if result.limit_message:
        return result.limit_message
    if hit == "memory":
        return (f"Error: the command was killed because it used more than {limits.memory_bytes // MIB} MiB of memory "
                "(sandbox.max_memory_mb). Process the data in smaller pieces or stream it instead of loading it whole.")
    if usage is not None:
        # A file stopped at the RLIMIT_FSIZE cap: bash reports the signal, the command may still exit 0.
        capped = result.exit_code in _SIGXFSZ_CODES or _hint(result, ("File size limit exceeded",))
        if usage.exceeded() or (capped and usage.remaining is not None):
            return quota_message(usage, stopped=False)
    if hit == "processes":
        return (f"Error: the command reached the limit of {limits.processes} processes and threads "
                "(sandbox.max_processes); some of its forks failed. Start fewer processes at a time.")
    if result.exit_code in (0, None):
        return None
    if limits.memory_bytes and _hint(result, _MEMORY_HINTS):
        return (f"Note: a memory allocation failed; each process may use at most {limits.memory_bytes // MIB} MiB "
                "(sandbox.max_memory_mb). Process the data in smaller pieces.")
    if limits.processes and _hint(result, _PROCESS_HINTS):
        return (f"Note: starting a process or thread failed; commands may run at most {limits.processes} "
                "(sandbox.max_processes).")
    if limits.open_files and _hint(result, _FILES_HINTS):
        return f"Note: a process may have at most {limits.open_files} files open at once (sandbox.max_open_files)."
    return None


# The watcher looks at the filesystem's used space every _WATCH_INTERVAL seconds (one
# statvfs call) and walks the thread's folders only when that grew by _WALK_TRIGGER bytes,
# or _WALK_AT_LEAST seconds went by, since the last walk: writes by anyone on the same
# filesystem trigger a walk, and the walk decides. Overshoot is what the command writes in
# one interval plus one walk.
_WATCH_INTERVAL = 0.02
_WALK_TRIGGER = 1024 * 1024
_WALK_AT_LEAST = 10.0


def _fs_used(path: str) -> int:
    try:
        info = os.statvfs(path)
    except OSError:
        return 0
    return (info.f_blocks - info.f_bfree) * info.f_frsize


class QuotaWatch:
    """The quota watcher of one command; remembers its last measurement for the verdict."""

    def __init__(self, quota: ThreadQuota):
        self.quota = quota
        self.path = str(quota.user_data_dir)
        self.usage = quota.usage()
        self.fs_used = _fs_used(self.path)
        self.at = time.monotonic()

    def _measure(self) -> QuotaUsage:
        self.usage = self.quota.usage()
        self.fs_used, self.at = _fs_used(self.path), time.monotonic()
        return self.usage

    def __call__(self) -> str | None:
        if _fs_used(self.path) - self.fs_used < _WALK_TRIGGER and time.monotonic() - self.at < _WALK_AT_LEAST:
            return None
        usage = self._measure()
        return quota_message(usage, stopped=True) if usage.exceeded() else None

    def final(self) -> QuotaUsage:
        """Usage after the command; a walk is saved when nothing on the filesystem grew."""
        if abs(_fs_used(self.path) - self.fs_used) < _WALK_TRIGGER // 16:
            return self.usage
        return self._measure()


def run_limited(argv: list[str], *, policy: CommandPolicy, cwd: str, env: dict[str, str], timeout: float,
                max_chars: int, cancel: threading.Event | None = None) -> CommandResult:
    quota = policy.quota if policy.quota is not None and policy.quota.enabled else None
    file_cap = None
    watch = None
    if quota is not None:
        watch = QuotaWatch(quota)
        file_cap = watch.usage.remaining

    limits = policy.limits
    controllers = cgroup_controllers() if (limits.processes or limits.memory_bytes) else {}
    group = CommandGroup(limits, controllers) if controllers else None
    has_pids_group = group is not None and "pids" in group.dirs
    # With a pids cgroup the tree is bounded there; RLIMIT_NPROC would only add noise.
    rlimits = limits if not has_pids_group else replace(limits, processes=0)
    limit_args = dict(file_size=file_cap, procs_files=group.procs_files if group else [],
                      extra_processes=_current_user_tasks() if rlimits.processes else 0)
    prefix = limit_prefix(rlimits, **limit_args)
    preexec = make_preexec(rlimits, **limit_args) if prefix is None else None
    argv = (prefix or []) + argv
    try:
        result = run_command(argv, cwd=cwd, env=env, timeout=timeout, max_chars=max_chars, cancel=cancel,
                             preexec=preexec, watch=watch, watch_interval=_WATCH_INTERVAL)
        hit = group.limit_hit() if group is not None else None
    finally:
        if group is not None:
            group.close()
    message = explain_limit(result, limits, hit, watch.final() if watch is not None else None)
    return replace(result, limit_message=message) if message != result.limit_message else result
