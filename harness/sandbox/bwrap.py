"""The isolated provider: each command runs inside bubblewrap namespaces.

Every ``execute_command`` starts a fresh ``bwrap`` with new user, pid, ipc, uts, cgroup
and (unless ``allow_network``) network namespaces. The root is an empty tmpfs into which
only these are mounted: the system's runtime directories read-only (``/usr`` and the
``/bin``/``/lib`` links, a short list of ``/etc`` files needed to run programs), this
thread's three user-data directories read-write at ``/mnt/user-data/...``, the skills
directory read-only at ``/mnt/skills``, and a private ``/tmp``. The virtual paths are
therefore real inside, the host's ``/etc/passwd``, home directories, ``DEER_FLOW_HOME`` and
other threads do not exist there, and no capabilities survive into the sandbox.

Processes cannot outlive their command: bwrap's init is pid 1 of the namespace and dies
with it (``--die-with-parent``), which takes every process in the namespace along.
File operations (read_file, write_file, …) run on the host with the same path checks as
the local provider; they need no namespace because they never execute model-chosen code.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from harness.sandbox.command import run_limited
from harness.sandbox.errors import SandboxUnavailable
from harness.sandbox.paths import USER_DATA, USER_DATA_SUBDIRS, VirtualFS
from harness.sandbox.process import CommandResult
from harness.sandbox.provider import TOOLBOX_VIRTUAL, HostSandboxProvider
from harness.sandbox.sandbox import Sandbox

logger = logging.getLogger(__name__)

SANDBOX_UID = 1000
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_TOP_LEVEL_RUNTIME = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# What programs need from /etc to start, resolve libraries, verify TLS and format dates.
# Deliberately not the whole directory: passwd, shadow, ssh keys and app config stay out.
_ETC_FILES = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates",
    "ca-certificates.conf", "localtime", "timezone", "nsswitch.conf", "mime.types", "protocols",
    "services", "bash.bashrc", "inputrc", "profile", "gai.conf", "magic", "magic.mime", "fonts",
    "locale.alias", "locale.gen", "papersize", "java-17-openjdk", "python3", "gitconfig",
)
_NETWORK_ETC_FILES = ("resolv.conf", "hosts", "host.conf")


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


class _GeneratedEtc:
    """passwd/group/hosts for the sandbox, so ``whoami`` works without the host's files."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="deerflow-bwrap-etc-"))
        (self.dir / "passwd").write_text(
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:/tmp:/bin/bash\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        )
        (self.dir / "group").write_text(f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n")
        (self.dir / "hosts").write_text("127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n")
        (self.dir / "hostname").write_text("sandbox\n")
        atexit.register(shutil.rmtree, self.dir, True)


_etc_lock = threading.Lock()
_etc: _GeneratedEtc | None = None


def _generated_etc() -> _GeneratedEtc:
    global _etc
    with _etc_lock:
        if _etc is None or not _etc.dir.exists():
            _etc = _GeneratedEtc()
        return _etc


def runtime_mount_args(*, allow_network: bool, extra_ro_paths: list[str] | tuple[str, ...] = ()) -> list[str]:
    """bwrap arguments for the read-only system part of the sandbox root."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _TOP_LEVEL_RUNTIME:
        path = Path("/", name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in _ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    generated = _generated_etc().dir
    for name in ("passwd", "group", "hostname"):
        args += ["--ro-bind", str(generated / name), f"/etc/{name}"]
    if allow_network:
        for name in _NETWORK_ETC_FILES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    else:
        args += ["--ro-bind", str(generated / "hosts"), "/etc/hosts"]
    for extra in extra_ro_paths:
        args += ["--ro-bind-try", extra, extra]
    return args


def base_args(bwrap: str, *, allow_network: bool, tmp_size: int = 0) -> list[str]:
    args = [bwrap, "--unshare-all"]
    if allow_network:
        args.append("--share-net")
    args += [
        "--die-with-parent",
        # A new session: the command cannot push input into the server's terminal (TIOCSTI).
        "--new-session",
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
        "--hostname", "sandbox",
        "--proc", "/proc",
        "--dev", "/dev",
        # /tmp is memory: bounded like the command's memory, also where no memory cgroup
        # can be made to charge it to.
        *(["--size", str(tmp_size)] if tmp_size else []),
        "--tmpfs", "/tmp",
        "--dir", USER_DATA,
    ]
    return args


_probe_lock = threading.Lock()
_probe_results: dict[str | None, tuple[bool, str]] = {}


def probe_bwrap(force: bool = False) -> tuple[bool, str]:
    """Whether bwrap can create the namespaces it needs here, and why not if it cannot.

    Containers often lack user namespaces or forbid mounting; only running it tells. The
    answer is cached per binary found on PATH, since it cannot change while we run.
    """
    binary = bwrap_path()
    with _probe_lock:
        if binary in _probe_results and not force:
            return _probe_results[binary]
        _probe_results[binary] = result = _probe(binary)
        return result


def _probe(binary: str | None) -> tuple[bool, str]:
    if binary is None:
        return False, "bwrap is not installed (Debian/Ubuntu package: bubblewrap)"
    argv = base_args(binary, allow_network=False) + runtime_mount_args(allow_network=False) + ["--", "/bin/sh", "-c", "echo ok"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=15, text=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"running bwrap failed: {exc}"
    if done.returncode == 0 and done.stdout.strip() == "ok":
        return True, ""
    reason = (done.stderr or done.stdout).strip().splitlines()
    return False, f"bwrap cannot create a sandbox here: {reason[-1] if reason else f'exit code {done.returncode}'}"


class BwrapSandbox(Sandbox):
    background_processes_survive = False

    def __init__(self, sandbox_id: str, user_id: str, thread_id: str, fs: VirtualFS, *, bwrap: str, timeout: float,
                 max_chars: int, allow_network: bool, extra_ro_paths: list[str]):
        super().__init__(sandbox_id, user_id, thread_id, fs)
        self.bwrap = bwrap
        self.default_timeout = timeout
        self.max_chars = max_chars
        self.allow_network = allow_network
        self.extra_ro_paths = extra_ro_paths

    def command_argv(self, command: str) -> list[str]:
        args = base_args(self.bwrap, allow_network=self.allow_network, tmp_size=self.policy.limits.memory_bytes)
        args += runtime_mount_args(allow_network=self.allow_network, extra_ro_paths=self.extra_ro_paths)
        for name in USER_DATA_SUBDIRS:
            host = self.fs.host_dir(name)
            host.mkdir(parents=True, exist_ok=True)
            args += ["--bind", str(host), f"{USER_DATA}/{name}"]
        # The skills directory is read-only, so the custom mount point cannot be made inside
        # it: /mnt/skills is a small tmpfs of its own, the sources are mounted below it, and
        # then it is made read-only too.
        has_skills = any(d is not None for d in (self.fs.skills_dir, self.fs.custom_skills_dir, self.fs.global_skills_dir))
        if has_skills:
            args += ["--tmpfs", self.fs.skills_virtual]
        if self.fs.skills_dir is not None:
            for child in sorted(self.fs.skills_dir.iterdir()):
                if child.is_dir() and not child.name.startswith(".") and child.name not in ("custom", "global"):
                    args += ["--ro-bind", str(child), f"{self.fs.skills_virtual}/{child.name}"]
        if self.fs.custom_skills_dir is not None and self.fs.custom_skills_dir.is_dir():
            args += ["--ro-bind", str(self.fs.custom_skills_dir), f"{self.fs.skills_virtual}/custom"]
        if self.fs.global_skills_dir is not None and self.fs.global_skills_dir.is_dir():
            args += ["--ro-bind", str(self.fs.global_skills_dir), f"{self.fs.skills_virtual}/global"]
        if has_skills:
            args += ["--remount-ro", self.fs.skills_virtual]
        if self.toolbox is not None:
            args += ["--ro-bind", str(self.toolbox), TOOLBOX_VIRTUAL]
        for virtual, host, writable in self.fs.extra_mounts:  # sandbox.mounts
            args += ["--bind" if writable else "--ro-bind", str(host), virtual]
        args += ["--chdir", f"{USER_DATA}/workspace", "--", "/bin/bash", "-c", command]
        return args

    def execute_command(self, command: str, env: Mapping[str, str] | None = None, timeout: float | None = None,
                        cancel: threading.Event | None = None) -> CommandResult:
        sandbox_env = self.policy.environment(
            env,
            {"PATH": f"{TOOLBOX_VIRTUAL}/bin:{SANDBOX_PATH}" if self.toolbox is not None else SANDBOX_PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "USER": "sandbox",
             "LOGNAME": "sandbox", "SHELL": "/bin/bash", "PWD": f"{USER_DATA}/workspace"},
        )
        return run_limited(
            self.command_argv(command),
            policy=self.policy,
            cwd="/",
            env=sandbox_env,
            timeout=timeout or self.default_timeout,
            max_chars=self.max_chars,
            cancel=cancel,
        )


class BwrapSandboxProvider(HostSandboxProvider):
    prefix = "bwrap"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        ok, reason = probe_bwrap()
        if not ok:
            raise SandboxUnavailable(f"the bwrap sandbox provider cannot run: {reason}")
        self.bwrap = bwrap_path()

    def _make_sandbox(self, sandbox_id, user_id, thread_id, fs):
        return BwrapSandbox(
            sandbox_id, user_id, thread_id, fs,
            bwrap=self.bwrap,
            timeout=self.config.bash_command_timeout,
            max_chars=self.config.max_output_chars,
            allow_network=self.config.allow_network,
            extra_ro_paths=list(getattr(self.config, "isolated_ro_paths", []) or []),
        )
