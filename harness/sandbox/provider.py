"""The provider lifecycle shared by the built-in providers.

A provider hands out one sandbox per (user, thread). Sandboxes are cheap objects over
directories, so they are held in a bounded LRU; an evicted one is rebuilt on demand from
its id, which encodes the user and thread. Tools check that the sandbox they got belongs
to the caller's user and thread before using it, so an id smuggled into thread state
cannot open another user's files.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from pathlib import Path

from harness.config.app_config import SandboxConfig
from harness.config.paths import REPO_ROOT, deer_flow_home, thread_user_data_dir
from harness.sandbox.command import CommandPolicy
from harness.sandbox.paths import DEFAULT_SKILLS, USER_DATA_SUBDIRS, VirtualFS, check_id
from harness.sandbox.quota import quota_for
from harness.sandbox.sandbox import Sandbox


class SandboxProvider(ABC):
    """``acquire``/``aacquire`` -> sandbox id, ``get`` -> Sandbox, ``release``."""

    @abstractmethod
    def acquire(self, user_id: str, thread_id: str) -> str: ...

    async def aacquire(self, user_id: str, thread_id: str) -> str:
        # Acquiring creates directories: file IO, so off the event loop.
        return await asyncio.to_thread(self.acquire, user_id, thread_id)

    @abstractmethod
    def get(self, sandbox_id: str) -> Sandbox | None: ...

    @abstractmethod
    def release(self, sandbox_id: str) -> None: ...

    def shutdown(self) -> None:
        """Free whatever the provider holds; the built-in ones hold only memory."""

    def warm_up(self) -> None:
        """Called once at server start: providers with work to do ahead (containers) begin it."""

    def thread_deleted(self, user_id: str, thread_id: str) -> None:
        """The thread is being deleted: let go of what the provider holds for it (before its files go)."""


def default_skills_dir(path: str | None) -> Path | None:
    directory = Path(path).expanduser() if path else REPO_ROOT / "skills"
    if not directory.is_absolute():
        directory = REPO_ROOT / directory
    return directory if directory.is_dir() else None


TOOLBOX_VIRTUAL = "/opt/deerflow-toolbox"


def toolbox_dir(config: SandboxConfig) -> Path | None:
    """The toolbox virtualenv, if built: ``sandbox.toolbox_path`` or ``.toolbox/`` in the repo."""
    raw = getattr(config, "toolbox_path", None)
    path = Path(raw).expanduser() if raw else REPO_ROOT / ".toolbox"
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path if (path / "bin" / "python").exists() else None


def custom_skills_dir(user_id: str) -> Path:
    """Where a user's installed skills live (``harness.skills.loader.custom_root``; kept
    here too so the sandbox does not import the skills package)."""
    return deer_flow_home() / "users" / str(user_id) / "skills" / "custom"


def global_skills_dir() -> Path:
    """Skills an admin installed for everyone (``harness.skills.loader.global_root``)."""
    return deer_flow_home() / "skills" / "global"


class HostSandboxProvider(SandboxProvider):
    """Per-thread sandboxes over host directories; subclasses choose how commands run."""

    prefix = "host"

    def __init__(self, config: SandboxConfig | None = None, *, skills_dir: str | Path | None = None,
                 skills_container_path: str = DEFAULT_SKILLS):
        self.config = config or SandboxConfig()
        self.skills_dir = default_skills_dir(str(skills_dir) if skills_dir is not None else None)
        self.skills_container_path = skills_container_path
        self.toolbox = toolbox_dir(self.config)
        self._cache: OrderedDict[str, Sandbox] = OrderedDict()
        self._lock = threading.Lock()
        self.cache_size = int(getattr(self.config, "cache_size", 256))

    @abstractmethod
    def _make_sandbox(self, sandbox_id: str, user_id: str, thread_id: str, fs: VirtualFS) -> Sandbox: ...

    def _sandbox_id(self, user_id: str, thread_id: str) -> str:
        return f"{self.prefix}:{user_id}:{thread_id}"

    def _parse_id(self, sandbox_id: str) -> tuple[str, str] | None:
        parts = sandbox_id.split(":") if isinstance(sandbox_id, str) else []
        if len(parts) != 3 or parts[0] != self.prefix:
            return None
        try:
            return check_id("user id", parts[1]), check_id("thread id", parts[2])
        except ValueError:
            return None

    def _build(self, user_id: str, thread_id: str) -> Sandbox:
        user_data = thread_user_data_dir(user_id, thread_id)
        for name in USER_DATA_SUBDIRS:
            (user_data / name).mkdir(parents=True, exist_ok=True)
        custom = custom_skills_dir(user_id)
        custom.mkdir(parents=True, exist_ok=True)
        shared = global_skills_dir()
        # Made now so the mount exists when an admin installs the first global skill later.
        shared.mkdir(parents=True, exist_ok=True)
        fs = VirtualFS(user_data, self.skills_dir, self.skills_container_path, custom_skills_dir=custom,
                       global_skills_dir=shared, extra_mounts=self._fs_mounts())
        sandbox = self._make_sandbox(self._sandbox_id(user_id, thread_id), user_id, thread_id, fs)
        sandbox.policy = CommandPolicy.from_config(self.config, quota_for(user_id, thread_id, self.config))
        sandbox.toolbox = self.toolbox
        return sandbox

    def _fs_mounts(self) -> list[tuple[str, Path, bool]]:
        """``sandbox.mounts`` as (virtual path, host path, writable) roots of every thread."""
        out = []
        for item in getattr(self.config, "mounts", None) or []:
            data = item if isinstance(item, dict) else item.model_dump()
            out.append((data["container_path"], Path(data["host_path"]), not data.get("read_only", False)))
        return out

    def thread_deleted(self, user_id: str, thread_id: str) -> None:
        self.release(self._sandbox_id(user_id, thread_id))

    def _remember(self, sandbox: Sandbox) -> Sandbox:
        with self._lock:
            existing = self._cache.get(sandbox.id)
            if existing is not None:
                self._cache.move_to_end(sandbox.id)
                return existing
            self._cache[sandbox.id] = sandbox
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            return sandbox

    def acquire(self, user_id: str, thread_id: str) -> str:
        user_id, thread_id = check_id("user id", user_id), check_id("thread id", thread_id)
        sandbox_id = self._sandbox_id(user_id, thread_id)
        with self._lock:
            if sandbox_id in self._cache:
                self._cache.move_to_end(sandbox_id)
                return sandbox_id
        return self._remember(self._build(user_id, thread_id)).id

    def get(self, sandbox_id: str) -> Sandbox | None:
        with self._lock:
            sandbox = self._cache.get(sandbox_id)
            if sandbox is not None:
                self._cache.move_to_end(sandbox_id)
                return sandbox
        ids = self._parse_id(sandbox_id)
        # Evicted from the LRU (or acquired by another process): rebuild it, but only for a
        # thread that was acquired before, so an id made up in state creates nothing.
        if ids is None or not thread_user_data_dir(*ids).is_dir():
            return None
        return self._remember(self._build(*ids))

    def release(self, sandbox_id: str) -> None:
        # The thread's files stay on disk; only the in-memory handle goes.
        with self._lock:
            self._cache.pop(sandbox_id, None)

    def cached_ids(self) -> list[str]:
        with self._lock:
            return list(self._cache)
