"""Per-command resource limits: memory, processes, open files and file size.

Two layers, because neither works everywhere on its own:

- **rlimits**, set in the child between fork and exec: ``RLIMIT_DATA`` (private writable
  memory per process: a large allocation fails with ENOMEM, while programs that merely
  reserve address space, such as V8 or Go, still start, which ``RLIMIT_AS`` would break),
  ``RLIMIT_NOFILE``, ``RLIMIT_NPROC`` and ``RLIMIT_FSIZE`` (no single file may grow past the
  disk quota left). They work without privileges, but ``RLIMIT_NPROC`` counts every process
  of the server's user and is ignored for root, and ``RLIMIT_DATA`` bounds one process, not
  the command's tree.
- **cgroups**, where this process may create one (root, or a delegated subtree): the command
  runs in a fresh cgroup with ``pids.max`` and a memory limit, which bound the whole tree
  whatever the user, and whose event counters tell us afterwards which limit was hit.
  cgroup v2 is used when its controllers are enabled for our subtree, else the v1
  ``pids``/``memory`` hierarchies.

Inside bubblewrap no capabilities survive, so a command cannot raise its hard limits. On
the local provider a command running as root could (``ulimit -H``): that provider does not
isolate anything, and the docs say so.
"""

from __future__ import annotations

import logging
import os
import resource
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

MIB = 1024 * 1024
_CGROUP_ROOT = Path("/sys/fs/cgroup")
_GROUP_DIR = "deerflow-sandbox"


@dataclass(frozen=True)
class ResourceLimits:
    memory_bytes: int = 0  # 0: no limit
    processes: int = 0
    open_files: int = 0

    @classmethod
    def from_config(cls, config: object) -> ResourceLimits:
        return cls(
            memory_bytes=int(getattr(config, "max_memory_mb", 0) or 0) * MIB,
            processes=int(getattr(config, "max_processes", 0) or 0),
            open_files=int(getattr(config, "max_open_files", 0) or 0),
        )


# -- cgroups ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Controller:
    name: str  # "pids" or "memory"
    parent: Path  # directory under which per-command groups are made
    limit_file: str
    events_file: str
    event_key: str  # the counter in events_file that says the limit was hit


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                found[name] = parts[2]
    return found


# A group left behind by a background process of a local command (or a crash) is removed by
# the next process that starts, once it is this old and empty; younger ones may belong to a
# command another server process is starting right now.
_STALE_SECONDS = 3600


def _usable(parent: Path) -> bool:
    """Whether we can create and remove a child group under ``parent``; sweeps stale ones."""
    probe = parent / f"probe-{uuid.uuid4().hex[:8]}"
    try:
        parent.mkdir(exist_ok=True)
        probe.mkdir()
        probe.rmdir()
    except OSError:
        return False
    now = time.time()
    for entry in os.scandir(parent):
        try:
            if entry.is_dir(follow_symlinks=False) and now - entry.stat().st_mtime > _STALE_SECONDS:
                os.rmdir(entry.path)
        except OSError:
            continue
    return True


def _find_controllers() -> dict[str, _Controller]:
    own = _own_cgroups()
    found: dict[str, _Controller] = {}
    v2_path = own.get("")
    for mount in (_CGROUP_ROOT, _CGROUP_ROOT / "unified"):
        if v2_path is None or not (mount / "cgroup.controllers").exists():
            continue
        here = mount / v2_path.lstrip("/")
        try:
            enabled = set((here / "cgroup.subtree_control").read_text().split())
        except OSError:
            continue
        parent = here / _GROUP_DIR
        specs = {"pids": ("pids.max", "pids.events", "max"), "memory": ("memory.max", "memory.events", "oom_kill")}
        for name, (limit, events, key) in specs.items():
            if name in enabled and _usable(parent):
                # Our own group must hand the controller on to the one we make below it.
                try:
                    (parent / "cgroup.subtree_control").write_text(f"+{name}")
                except OSError:
                    continue
                found[name] = _Controller(name, parent, limit, events, key)
        if found:
            return found
    v1 = {"pids": ("pids.max", "pids.events", "max"), "memory": ("memory.limit_in_bytes", "memory.oom_control", "oom_kill")}
    for name, (limit, events, key) in v1.items():
        mount = _CGROUP_ROOT / name
        if name in own and (mount / "cgroup.procs").exists():
            parent = mount / own[name].lstrip("/") / _GROUP_DIR
            if _usable(parent):
                found[name] = _Controller(name, parent, limit, events, key)
    return found


_controllers_lock = threading.Lock()
_controllers: dict[str, _Controller] | None = None


def cgroup_controllers() -> dict[str, _Controller]:
    """The controllers we can use, probed once per process."""
    global _controllers
    with _controllers_lock:
        if _controllers is None:
            _controllers = _find_controllers()
            logger.info("Sandbox limits: cgroup controllers %s", sorted(_controllers) or "none (rlimits only)")
        return _controllers


def _read_counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value.strip() or 0)
    except (OSError, ValueError):
        pass
    return 0


class CommandGroup:
    """The cgroups of one command: made before it starts, removed after it ends."""

    def __init__(self, limits: ResourceLimits, controllers: dict[str, _Controller]):
        self.dirs: dict[str, tuple[_Controller, Path]] = {}
        wanted = {"pids": limits.processes, "memory": limits.memory_bytes}
        name = uuid.uuid4().hex
        for key, value in wanted.items():
            controller = controllers.get(key)
            if not value or controller is None:
                continue
            path = controller.parent / name
            try:
                path.mkdir()
                (path / controller.limit_file).write_text(str(value))
                if key == "memory" and controller.limit_file == "memory.max":
                    _write_quietly(path / "memory.swap.max", "0")
            except OSError as exc:
                logger.warning("Sandbox limits: cannot set up the %s cgroup (%s); rlimits only", key, exc)
                _remove(path)
                continue
            self.dirs[key] = (controller, path)
        self.procs_files = [str(path / "cgroup.procs") for _c, path in self.dirs.values()]

    def limit_hit(self) -> str | None:
        """"memory" or "processes" when the kernel enforced that limit during the command."""
        memory = self.dirs.get("memory")
        if memory and _read_counter(memory[1] / memory[0].events_file, memory[0].event_key):
            return "memory"
        pids = self.dirs.get("pids")
        if pids and _read_counter(pids[1] / pids[0].events_file, pids[0].event_key):
            return "processes"
        return None

    def close(self) -> None:
        # A background process left by a local command keeps its group; it is retried later.
        with _leftover_lock:
            retry = [path for _c, path in self.dirs.values()] + _leftover
            _leftover[:] = [path for path in retry if not _remove(path)][-1000:]


_leftover_lock = threading.Lock()
_leftover: list[Path] = []


def _write_quietly(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError:
        pass


def _remove(path: Path) -> bool:
    try:
        path.rmdir()
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


# -- the child side --------------------------------------------------------------------

_PRLIMIT = shutil.which("prlimit")
_DASH = shutil.which("dash")
# Limits go in front of the command as argv rather than in a preexec_fn: a preexec_fn makes
# Python fork the whole server process instead of vfork-ing it, which costs several
# milliseconds once the agent's libraries are loaded. dash does both jobs in one small exec
# (about 0.5 ms): it joins each cgroup named before "--" with its own pid, sets the limits
# with its ulimit (one resource per call, soft and hard alike; units below) and execs the
# rest. Without dash, /bin/sh joins the cgroups and prlimit(1) sets the limits.
_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 126; shift; done; shift'
_DASH_ULIMIT = {"data": ("-d", 1024), "nofile": ("-n", 1), "nproc": ("-p", 1), "fsize": ("-f", 512)}


def _rlimit_settings(limits: ResourceLimits, file_size: int | None, extra_processes: int) -> list[tuple[str, int, int]]:
    wanted = []
    if limits.memory_bytes:
        wanted.append(("data", resource.RLIMIT_DATA, limits.memory_bytes))
    if limits.open_files:
        wanted.append(("nofile", resource.RLIMIT_NOFILE, limits.open_files))
    if limits.processes:
        wanted.append(("nproc", resource.RLIMIT_NPROC, limits.processes + extra_processes))
    if file_size is not None:
        wanted.append(("fsize", resource.RLIMIT_FSIZE, max(0, file_size)))
    settings = []
    for name, which, value in wanted:
        # The child inherits our hard limit and may not go above it.
        hard = resource.getrlimit(which)[1]
        settings.append((name, which, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return settings


def limit_prefix(limits: ResourceLimits, *, file_size: int | None, procs_files: list[str],
                 extra_processes: int = 0) -> list[str] | None:
    """argv to put in front of the command so it runs under these limits; None if neither
    dash nor prlimit(1) is there (then :func:`make_preexec` does the same from Python)."""
    settings = _rlimit_settings(limits, file_size, extra_processes)
    if not settings and not procs_files:
        return []
    if _DASH:
        steps = [_JOIN] + [f"ulimit {_DASH_ULIMIT[n][0]} {v // _DASH_ULIMIT[n][1]} || exit 126" for n, _w, v in settings]
        return [_DASH, "-c", "; ".join(steps) + '; exec "$@"', "dash", *procs_files, "--"]
    prefix: list[str] = []
    if procs_files:
        prefix += ["/bin/sh", "-c", _JOIN + '; exec "$@"', "sh", *procs_files, "--"]
    if settings:
        if _PRLIMIT is None:
            return None
        prefix += [_PRLIMIT, *(f"--{name}={value}" for name, _r, value in settings), "--"]
    return prefix


def make_preexec(limits: ResourceLimits, *, file_size: int | None, procs_files: list[str],
                 extra_processes: int = 0) -> Callable[[], None] | None:
    """The function the child runs before exec; None when there is nothing to set.

    Runs between fork and exec, so it only makes system calls: no allocation-heavy Python,
    no locks another thread might hold.
    """
    settings = [(which, value) for _n, which, value in _rlimit_settings(limits, file_size, extra_processes)]
    if not settings and not procs_files:
        return None
    paths = [p.encode() for p in procs_files]

    def preexec() -> None:
        for path in paths:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        for which, value in settings:
            _soft, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))

    return preexec


def user_task_count() -> int:
    """Tasks (threads included) of this process's real user: what RLIMIT_NPROC counts."""
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count
