"""The container provider: one container per thread on Docker or Podman, with a warm pool.

Each thread gets its own container from ``sandbox.image``, started with hard limits from the
engine's cgroups (memory with no swap, pids, CPU, open files), no network (with
``allow_network``, a way out through the SSRF guard's proxy only: harness/sandbox/egress.py), a
read-only root with a private ``/tmp`` in memory, every capability dropped and
``no-new-privileges``. The thread's folders are bind mounts at the same virtual paths as
bubblewrap's (``/mnt/user-data/{workspace,uploads,outputs}``, ``/mnt/skills``), so file tools
keep working on the host side (they never go through the API) and commands see the same files;
where the server may mount, those folders are the thread's own file system of
``thread_quota_mb`` (harness/sandbox/disk.py), a hard disk limit. Commands run with ``exec`` as
the server's own uid, which owns the thread's folders. The container is started (or taken from
the pool) by the thread's first command.

The warm pool: ``replicas`` containers started ahead, each with an empty *slot* directory
mounted with ``rslave`` propagation. Assigning one to a thread bind-mounts the thread's
folders into the slot on the host, and they appear inside at once: no container start on
the request path. This needs the server to be allowed to mount (root, as rootful Podman
is); where it cannot, the pool stays empty and every thread gets a fresh container.

Ownership: every container is leased to this process in the ownership store (the database
under the server), renewed by a background thread. At start, containers with our labels
whose lease lapsed or whose owner process died are removed, so a crash leaves nothing
running after the next start. Idle containers are removed after ``idle_timeout``; the
thread's files stay on the host, and its next command gets a fresh container.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import resource
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import docker.errors
import docker.types

from harness.config.paths import deer_flow_home, thread_user_data_dir
from harness.net.guard import GuardPolicy
from harness.sandbox import disk
from harness.sandbox.command import CommandPolicy, QuotaWatch, explain_limit
from harness.sandbox.engine import (
    INIT, LABEL, LABEL_OWNER, LABEL_PREFIX, LABEL_THREAD, ContainerGone, ContainerMissing, Engine, default_engine_url,
)
from harness.sandbox.egress import CONTAINER_DIR as EGRESS_DIR
from harness.sandbox.egress import PORT as EGRESS_PORT
from harness.sandbox.egress import SandboxEgress, egress_dir, proxy_env
from harness.sandbox.errors import SandboxError, SandboxUnavailable
from harness.sandbox.limits import MIB
from harness.sandbox.ownership import MemoryOwnershipStore, OwnershipStore, get_ownership_store, lease_live, new_owner_id, owner_dead
from harness.sandbox.paths import USER_DATA, USER_DATA_SUBDIRS, VirtualFS
from harness.sandbox.process import CommandResult
from harness.sandbox.provider import HostSandboxProvider, custom_skills_dir, global_skills_dir
from harness.sandbox.quota import human
from harness.sandbox.sandbox import Sandbox

logger = logging.getLogger(__name__)

SANDBOX_PATH = "/opt/deerflow-toolbox/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_CUSTOM = "custom"


def _thread_key(user_id: str, thread_id: str) -> str:
    return f"{user_id}:{thread_id}"


def _run_mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, timeout=30)


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def _is_mount(path: Path) -> bool:
    # os.path.ismount misses a bind mount from the same filesystem; the mount table does not.
    target = str(path)
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            for line in fh:
                point = line.split(" ")[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
                if point == target:
                    return True
    except OSError:
        return False
    return False


class ContainerSandbox(Sandbox):
    background_processes_survive = True

    def __init__(self, sandbox_id: str, user_id: str, thread_id: str, fs: VirtualFS, *, provider: ContainerSandboxProvider):
        super().__init__(sandbox_id, user_id, thread_id, fs)
        self.provider = provider

    def execute_command(self, command: str, env: Mapping[str, str] | None = None, timeout: float | None = None,
                        cancel: threading.Event | None = None) -> CommandResult:
        return self.provider.execute(self, command, env, timeout, cancel)


class ContainerSandboxProvider(HostSandboxProvider):
    prefix = "container"

    def __init__(self, *args, store: OwnershipStore | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        cfg = self.config
        self.engine = Engine(getattr(cfg, "engine_url", None) or default_engine_url())
        self.image = getattr(cfg, "image", None) or "deerflow-sandbox:latest"
        self.container_prefix = getattr(cfg, "container_prefix", None) or "deer-flow-sandbox"
        self.replicas = int(getattr(cfg, "replicas", 0) or 0)
        self.idle_timeout = float(getattr(cfg, "idle_timeout", 600) or 0)
        self.lease_seconds = float(getattr(cfg, "lease_seconds", 60) or 60)
        self.cpus = float(getattr(cfg, "cpus", 0) or 0)
        self.tmp_mb = int(getattr(cfg, "tmp_mb", 256) or 0)
        self.owner = new_owner_id()
        self.store = store if store is not None else get_ownership_store()
        self.slots_root = deer_flow_home() / "sandbox" / "slots"
        self._threads: dict[str, str] = {}  # thread key -> container name
        self._pool: list[str] = []
        self._oom_seen: dict[str, int] = {}
        self._busy: dict[str, int] = {}  # container -> commands running in it
        self._state = threading.Lock()
        self._thread_locks: dict[str, threading.Lock] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._started = False
        self._start_lock = threading.Lock()
        self._maintainer: threading.Thread | None = None
        self._can_mount = os.geteuid() == 0
        self.egress = None
        if cfg.allow_network:
            networks = getattr(cfg, "allowed_private_networks", None) or []
            self.egress = SandboxEgress(egress_dir(deer_flow_home()), self.owner, GuardPolicy.from_networks(networks))
        self.disk_bytes = self._disk_bytes()
        self.spares_dir = deer_flow_home() / "sandbox" / "disks"
        if self.disk_bytes:
            for line in disk.reconcile(deer_flow_home(), self.disk_bytes):
                logger.info("Sandbox: thread disks: %s", line)
            # Spares of another size (the quota changed) or half made (a crash) serve nobody.
            for spare in self.spares_dir.glob("spare-*"):
                with contextlib.suppress(OSError):
                    if spare.suffix != ".img" or spare.stat().st_size != self.disk_bytes:
                        spare.unlink()

    def _disk_bytes(self) -> int:
        """The size of each thread's disk image, or 0 for host folders and the quota watcher."""
        mode = getattr(self.config, "thread_disk", "auto")
        size = int(getattr(self.config, "thread_quota_mb", 0) or 0) * MIB
        if mode == "watcher" or not size:
            return 0
        reason = disk.unsupported_reason()
        if reason is None:
            return size
        if mode == "image":
            raise SandboxUnavailable(f"sandbox.thread_disk is 'image' but thread disk images cannot be made here: {reason}.")
        logger.warning("Sandbox: thread disks are host folders bounded by the quota watcher, not a hard limit: %s.", reason)
        return 0

    # -- sandboxes -----------------------------------------------------------------------

    def _make_sandbox(self, sandbox_id, user_id, thread_id, fs):
        return ContainerSandbox(sandbox_id, user_id, thread_id, fs, provider=self)

    # acquire is the base class's: no engine call. The container is found or started by the
    # first command, so a run that never runs one works while the engine is down, and takes
    # no container from the pool.

    def _build(self, user_id: str, thread_id: str) -> Sandbox:
        if self.disk_bytes:
            try:
                disk.ensure_mounted(thread_user_data_dir(user_id, thread_id), self.disk_bytes, spares=self.spares_dir)
            except (disk.DiskError, OSError) as exc:
                raise SandboxUnavailable(f"Error: this thread's disk image could not be mounted: {exc}") from exc
        return super()._build(user_id, thread_id)


    def thread_deleted(self, user_id: str, thread_id: str) -> None:
        """Remove the thread's container, whichever process started it, then its disk."""
        key = _thread_key(user_id, thread_id)
        with self._thread_lock(key):
            with self._state:
                name = self._threads.pop(key, None)
            held = self.store.for_thread(key)
            for container in {name, held.container if held is not None else None} - {None}:
                self._destroy(container)
        super().thread_deleted(user_id, thread_id)
        if self.disk_bytes:
            disk.remove(thread_user_data_dir(user_id, thread_id))

    def warm_up(self) -> None:
        """At server start: reconcile and fill the pool in the background, retrying while the engine is down."""
        def run() -> None:
            while not self._stop.is_set():
                try:
                    self.start()
                    return
                except SandboxError as exc:
                    logger.warning("Sandbox: the container provider cannot start yet: %s", exc)
                self._stop.wait(30)

        threading.Thread(target=run, name="sandbox-containers-start", daemon=True).start()

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Reconcile leftovers and start the maintenance thread (renewal, pool, idle); once."""
        with self._start_lock:
            if self._started:
                return
            self.engine.ping()
            self.engine.check_image(self.image)
            if self.egress is not None:
                self.egress.start()
            self.reconcile()
            self._started = True
            self._maintainer = threading.Thread(target=self._maintain, name="sandbox-containers", daemon=True)
            self._maintainer.start()

    def shutdown(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._maintainer is not None:
            self._maintainer.join(10)
        with self._state:
            names = list(self._pool) + list(self._threads.values())
            self._pool.clear()
            self._threads.clear()
        for name in names:
            self._destroy(name)
        if self.egress is not None:
            self.egress.close()

    def reconcile(self) -> list[str]:
        """Remove our-labelled containers no live process owns; returns their names.

        With a shared store (the database) a container without a live lease is an orphan.
        With the in-memory store other processes' leases are invisible, so only containers
        whose labelled owner is a dead process of this host are removed.
        """
        shared = not isinstance(self.store, MemoryOwnershipStore)
        leases = {lease.container: lease for lease in self.store.leases()}
        removed = []
        for item in self.engine.list(self.container_prefix):
            name, label_owner = item["name"], item["labels"].get(LABEL_OWNER, "")
            lease = leases.get(name)
            if label_owner == self.owner or (lease is not None and lease_live(lease)):
                continue
            if not shared and not owner_dead(label_owner):
                continue
            self._destroy(name)
            removed.append(name)
        for lease in leases.values():
            if lease.owner != self.owner and not lease_live(lease):
                self.store.release(lease.container, lease.owner)
        self._clean_slots()
        if removed:
            logger.info("Sandbox: removed %d container(s) left by a stopped server: %s", len(removed), ", ".join(removed))
        return removed

    def _clean_slots(self) -> None:
        if not self.slots_root.is_dir():
            return
        live = {lease.container for lease in self.store.leases() if lease_live(lease)}
        for slot in self.slots_root.iterdir():
            if slot.name not in live:
                self._remove_slot(slot)

    def _maintain(self) -> None:
        interval = max(0.5, min(self.lease_seconds / 4, 15.0))
        while not self._stop.is_set():
            try:
                self.store.renew(self.owner, self.lease_seconds)
                self._reap_idle()
                self._fill_pool()
            except Exception:  # noqa: BLE001 - the loop must outlive an engine hiccup
                logger.warning("Sandbox: container maintenance failed", exc_info=True)
            self._wake.wait(interval)
            self._wake.clear()

    def _fill_spares(self) -> None:
        """As many formatted thread disks ahead as warm containers: a new thread then pays for neither."""
        if not self.disk_bytes or not self.replicas:
            return
        try:
            spares = [p for p in self.spares_dir.glob("spare-*.img") if p.stat().st_size == self.disk_bytes]
        except OSError:
            spares = []
        for _ in range(self.replicas - len(spares)):
            if self._stop.is_set():
                return
            disk.make_spare(self.spares_dir, self.disk_bytes)

    def _fill_pool(self) -> None:
        if not self._can_mount:
            return
        self._fill_spares()
        while not self._stop.is_set():
            with self._state:
                if len(self._pool) >= self.replicas:
                    return
            name = self._create(thread_key="", user_id=None, thread_id=None)
            with self._state:
                self._pool.append(name)

    def _reap_idle(self) -> None:
        now = time.time()
        with self._state:
            assigned = dict(self._threads)
        leases = {lease.container: lease for lease in self.store.leases()}
        for key, name in assigned.items():
            lease = leases.get(name)
            if lease is None or lease.owner != self.owner:
                # Released, or another process's container this one borrowed: its owner reaps it.
                if lease is None or not lease_live(lease):
                    with self._state:
                        if self._threads.get(key) == name:
                            del self._threads[key]
                continue
            if self.idle_timeout <= 0 or now - lease.last_used < self.idle_timeout:
                continue
            lock = self._thread_lock(key)
            if not lock.acquire(blocking=False):
                continue  # a command is starting
            try:
                with self._state:
                    # A command running in it (however long) keeps it: commands count in under this lock.
                    if self._threads.get(key) != name or self._busy.get(name):
                        continue
                    del self._threads[key]
                self._destroy(name)
                logger.info("Sandbox: removed idle container %s", name)
            finally:
                lock.release()

    def pool_size(self) -> int:
        with self._state:
            return len(self._pool)

    def wait_for_pool(self, timeout: float = 120.0) -> bool:
        """Block until the pool holds ``replicas`` containers (tests, warm-up at start)."""
        self.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pool_size() >= self.replicas:
                return True
            self._wake.set()
            time.sleep(0.1)
        return False

    # -- containers ----------------------------------------------------------------------

    def _name(self, thread_key: str) -> str:
        seed = f"{self.owner}:{thread_key}:{time.time_ns()}"
        return f"{self.container_prefix}-{hashlib.sha256(seed.encode()).hexdigest()[:16]}"

    def _ulimits(self) -> list[docker.types.Ulimit]:
        # The engine's defaults may exceed what this process may grant (runc then refuses
        # to start); ask for no more than our own hard limits.
        nofile_hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nproc_hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        nofile = self.policy_limits().open_files or nofile_hard
        if nofile_hard != resource.RLIM_INFINITY:
            nofile = min(nofile, nofile_hard)
        # The pids cgroup bounds the container; RLIMIT_NPROC only has to be low enough for the
        # engine to grant (it counts the uid's tasks host-wide, and root ignores it).
        nproc = max(self.policy_limits().processes, 4096)
        if nproc_hard != resource.RLIM_INFINITY:
            nproc = min(nproc, nproc_hard)
        return [docker.types.Ulimit(name="nofile", soft=nofile, hard=nofile),
                docker.types.Ulimit(name="nproc", soft=nproc, hard=nproc)]

    def policy_limits(self):
        return CommandPolicy.from_config(self.config, None).limits

    def _skills_mounts(self, custom: Path | None) -> list[docker.types.Mount]:
        mounts = []
        skills_virtual = self.skills_container_path
        if self.skills_dir is not None:
            for child in sorted(self.skills_dir.iterdir()):
                if child.is_dir() and not child.name.startswith(".") and child.name not in (_CUSTOM, "global"):
                    mounts.append(docker.types.Mount(f"{skills_virtual}/{child.name}", str(child), type="bind", read_only=True))
        shared = global_skills_dir()
        shared.mkdir(parents=True, exist_ok=True)
        mounts.append(docker.types.Mount(f"{skills_virtual}/global", str(shared), type="bind", read_only=True))
        if custom is not None:
            mounts.append(docker.types.Mount(f"{skills_virtual}/{_CUSTOM}", str(custom), type="bind", read_only=True,
                                             propagation="rslave" if custom.parent.parent == self.slots_root else None))
        return mounts

    def _extra_mounts(self) -> list[docker.types.Mount]:
        out = [docker.types.Mount(virtual, str(host), type="bind", read_only=not writable) for virtual, host, writable in self._fs_mounts()]
        if self.egress is not None:
            out.append(docker.types.Mount(EGRESS_DIR, str(self.egress.directory), type="bind", read_only=True))
        return out

    def _create(self, *, thread_key: str, user_id: str | None, thread_id: str | None) -> str:
        """Start a container: for a thread (its folders mounted) or for the pool (a slot)."""
        name = self._name(thread_key)
        if not self.store.claim(name, self.owner, thread_key, self.lease_seconds):
            raise SandboxError("Error: this thread's sandbox is held by another server process; try again shortly.")
        try:
            if user_id is None:
                slot = self._make_slot(name)
                mounts = [docker.types.Mount(USER_DATA, str(slot / "user-data"), type="bind", propagation="rslave")]
                mounts += self._skills_mounts(slot / _CUSTOM)
            else:
                user_data = thread_user_data_dir(user_id, thread_id)
                mounts = [docker.types.Mount(f"{USER_DATA}/{sub}", str(user_data / sub), type="bind")
                          for sub in USER_DATA_SUBDIRS]
                mounts += self._skills_mounts(custom_skills_dir(user_id))
            mounts += self._extra_mounts()
            limits = self.policy_limits()
            spec = dict(
                image=self.image, name=name, hostname="sandbox", network_mode="none",
                command=INIT + ([EGRESS_DIR, str(EGRESS_PORT)] if self.egress is not None else []),
                labels={LABEL: "1", LABEL_OWNER: self.owner, LABEL_PREFIX: self.container_prefix, LABEL_THREAD: thread_key},
                mounts=mounts, read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
                ulimits=self._ulimits(), working_dir=f"{USER_DATA}/workspace",
                tmpfs={"/tmp": f"size={self.tmp_mb}m,mode=1777" if self.tmp_mb else "mode=1777"},
            )
            if limits.memory_bytes:
                spec.update(mem_limit=limits.memory_bytes, memswap_limit=limits.memory_bytes)
            if limits.processes:
                spec["pids_limit"] = limits.processes
            if self.cpus:
                spec["nano_cpus"] = int(self.cpus * 1e9)
            try:
                self.engine.run(**spec)
            except docker.errors.ImageNotFound:
                self.engine.check_image(self.image)
                raise
        except BaseException:
            try:
                self.engine.remove(name)  # created but not started leaves a container behind
            except SandboxUnavailable:
                pass
            self.store.release(name, self.owner)
            self._remove_slot(self.slots_root / name)
            raise
        return name

    def _make_slot(self, name: str) -> Path:
        slot = self.slots_root / name
        for sub in USER_DATA_SUBDIRS:
            (slot / "user-data" / sub).mkdir(parents=True, exist_ok=True)
        (slot / _CUSTOM).mkdir(parents=True, exist_ok=True)
        # A shared mount, so what is mounted below it later propagates into the container.
        _run_mount("--bind", str(slot), str(slot))
        _run_mount("--make-rshared", str(slot))
        return slot

    def _fill_slot(self, name: str, user_id: str, thread_id: str) -> None:
        slot = self.slots_root / name
        user_data = thread_user_data_dir(user_id, thread_id)
        for sub in USER_DATA_SUBDIRS:
            _run_mount("--bind", str(user_data / sub), str(slot / "user-data" / sub))
        # Read-only before it reaches the slot: a remount is not propagated, but a new mount
        # carries its flags to the container's copy. So: bind, make read-only, bind that.
        stage = self.slots_root / f".{name}.stage"
        stage.mkdir(exist_ok=True)
        try:
            _run_mount("--bind", str(custom_skills_dir(user_id)), str(stage))
            _run_mount("-o", "remount,bind,ro", str(stage))
            _run_mount("--bind", str(stage), str(slot / _CUSTOM))
        finally:
            if _is_mount(stage):
                _umount(stage)
            try:
                stage.rmdir()
            except OSError:
                pass

    def _remove_slot(self, slot: Path) -> None:
        if not slot.exists():
            return
        for sub in USER_DATA_SUBDIRS:
            target = slot / "user-data" / sub
            if _is_mount(target):
                _umount(target)
        if _is_mount(slot / _CUSTOM):
            _umount(slot / _CUSTOM)
        if _is_mount(slot):
            _umount(slot)
        # Only empty directories go: a mount still in place keeps its files out of reach.
        for sub in USER_DATA_SUBDIRS:
            try:
                (slot / "user-data" / sub).rmdir()
            except OSError:
                pass
        for path in (slot / "user-data", slot / _CUSTOM, slot):
            try:
                path.rmdir()
            except OSError:
                pass

    def _destroy(self, name: str) -> None:
        try:
            self.engine.remove(name)
        except SandboxUnavailable:
            logger.warning("Sandbox: could not remove container %s: the engine does not answer", name)
        self._remove_slot(self.slots_root / name)
        self.store.release(name, None)

    def _thread_lock(self, key: str) -> threading.Lock:
        with self._state:
            return self._thread_locks.setdefault(key, threading.Lock())

    def container_for(self, sandbox: Sandbox) -> str:
        """This thread's running container: the one it has, a warm one, or a new one."""
        key = _thread_key(sandbox.user_id, sandbox.thread_id)
        with self._state:
            name = self._threads.get(key)
        if name is not None:
            return name
        self.start()
        with self._thread_lock(key):
            with self._state:
                name = self._threads.get(key)
                if name is not None:
                    return name
            held = self.store.for_thread(key)
            if held is not None and held.owner != self.owner and lease_live(held) and self.engine.running(held.container):
                # Another server process serves this thread; its container is as good as ours.
                with self._state:
                    self._threads[key] = held.container
                return held.container
            if held is not None and not lease_live(held):
                self._destroy(held.container)
            name = self._take_warm(key, sandbox)
            if name is None:
                name = self._create(thread_key=key, user_id=sandbox.user_id, thread_id=sandbox.thread_id)
            with self._state:
                self._threads[key] = name
            self._wake.set()  # refill the pool
            return name

    def _take_warm(self, key: str, sandbox: Sandbox) -> str | None:
        while True:
            with self._state:
                if not self._pool:
                    return None
                name = self._pool.pop(0)
            try:
                self._fill_slot(name, sandbox.user_id, sandbox.thread_id)
                if self.store.assign(name, self.owner, key):
                    return name
            except (subprocess.SubprocessError, OSError):
                logger.warning("Sandbox: could not hand warm container %s to a thread", name, exc_info=True)
            self._destroy(name)

    def forget(self, sandbox: Sandbox, name: str) -> None:
        key = _thread_key(sandbox.user_id, sandbox.thread_id)
        with self._state:
            if self._threads.get(key) == name:
                del self._threads[key]
        self._destroy(name)

    # -- commands ------------------------------------------------------------------------

    def _disk_full(self, sandbox: Sandbox, result: CommandResult) -> str | None:
        """The tool's words when the thread's disk image is full and the command hit it."""
        used = disk.usage(sandbox.fs.user_data_dir)
        if used is None:
            return None
        text = result.output.head + result.output.tail
        in_use, total = used
        # Full, and the command noticed (a full /tmp says the same words: the disk must be full too).
        if total - in_use > total // 100 + MIB or ("No space left on device" not in text and result.exit_code in (0, None)):
            return None
        return (f"Error: this thread's disk is full: its files may take at most {human(total)} "
                "(sandbox.thread_quota_mb, a hard limit: the thread's own file system), and writes past it failed "
                f"with 'No space left on device'; {human(in_use)} is in use. Delete files you no longer need (e.g. "
                "`rm -r` build output or downloads under /mnt/user-data/workspace), or write smaller results, then try again.")

    def _oom_baseline(self, name: str) -> int | None:
        """The container's OOM-kill count before a command; read from the engine once per container."""
        with self._state:
            seen = self._oom_seen.get(name)
        if seen is None:
            seen = self.engine.oom_kills(name)
            if seen is not None:
                with self._state:
                    self._oom_seen[name] = seen
        return seen

    def execute(self, sandbox: ContainerSandbox, command: str, env: Mapping[str, str] | None, timeout: float | None,
                cancel: threading.Event | None) -> CommandResult:
        limits = sandbox.policy.limits
        sandbox_env = sandbox.policy.environment(
            env, {"PATH": SANDBOX_PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "USER": "sandbox", "LOGNAME": "sandbox",
                  "SHELL": "/bin/bash", "PWD": f"{USER_DATA}/workspace", **(proxy_env() if self.egress is not None else {})})
        key = _thread_key(sandbox.user_id, sandbox.thread_id)
        quota = sandbox.policy.quota if sandbox.policy.quota is not None and sandbox.policy.quota.enabled else None
        # The same watcher as bubblewrap's: the whole quota without thread disks, the user's quota with them.
        watch = QuotaWatch(quota) if quota is not None else None
        for attempt in (1, 2):
            name = self.container_for(sandbox)
            # Held only around bookkeeping: the idle reaper skips a thread whose lock is taken,
            # and the touch below makes it wait a whole idle_timeout again.
            with self._thread_lock(key):
                self.store.touch(name)
                with self._state:
                    self._busy[name] = self._busy.get(name, 0) + 1
            try:
                before = self._oom_baseline(name) if limits.memory_bytes else None
                result = self.engine.execute(
                    name, command, user=f"{os.getuid()}:{os.getgid()}", env=sandbox_env,
                    workdir=f"{USER_DATA}/workspace", timeout=timeout or self.config.bash_command_timeout,
                    max_chars=self.config.max_output_chars, cancel=cancel, watch=watch)
                break
            except ContainerMissing:
                # Gone before the command started (reaped, engine restarted): a fresh one is safe.
                self.forget(sandbox, name)
                if attempt == 2:
                    raise SandboxError("Error: the sandbox container could not be started; try again.") from None
            except ContainerGone as exc:
                self.forget(sandbox, name)
                raise SandboxError(
                    "Error: the sandbox container stopped while the command ran (the container engine restarted or "
                    "removed it). The thread's files are intact; run the command again to get a fresh sandbox."
                ) from exc
            finally:
                with self._state:
                    self._busy[name] -= 1
                    if not self._busy[name]:
                        del self._busy[name]
        self.store.touch(name)
        hit = None
        if before is not None and result.exit_code not in (0, None):
            after = self.engine.oom_kills(name)
            if after is not None:
                with self._state:
                    self._oom_seen[name] = after
                if after > before:
                    hit = "memory"
        usage = watch.final() if watch is not None else None
        message = explain_limit(result, limits, hit, usage)
        if hit is None and self.disk_bytes and not result.limit_message:
            message = self._disk_full(sandbox, result) or message
        if hit == "memory":
            message = (f"Error: the command was killed because the sandbox used more than {limits.memory_bytes // MIB} MiB "
                       "of memory (sandbox.max_memory_mb, a hard limit of its container). Process the data in smaller "
                       "pieces or stream it instead of loading it whole.")
        if message != result.limit_message:
            result = replace(result, limit_message=message)
        return result
