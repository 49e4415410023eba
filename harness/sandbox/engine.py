"""The container engine, spoken to through the Docker Engine API (Docker, or Podman's service).

One client, the ``docker`` package, drives both. Every call here blocks; callers run them
on worker threads, never on the event loop. Errors become :class:`SandboxUnavailable` with
words for the operator (which socket, which build command) or :class:`SandboxError` for the
model.

Commands run with ``exec`` as their own session (``setsid``), which writes its pid to a file
in the container's private ``/tmp``, so a timeout or a cancel can kill the whole process
group with a second exec: the Engine API has no way to signal an exec.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping

import docker
import docker.errors
import requests.exceptions
from docker.utils.socket import frames_iter

from harness.sandbox.errors import SandboxError, SandboxUnavailable
from harness.sandbox.output import OutputCapture
from harness.sandbox.process import CommandResult

BUILD_COMMAND = "scripts/build_sandbox_image.sh"
LABEL = "deerflow.sandbox"
LABEL_OWNER = "deerflow.sandbox.owner"
LABEL_PREFIX = "deerflow.sandbox.prefix"
LABEL_THREAD = "deerflow.sandbox.thread"
_PID_DIR = "/tmp/.deerflow-exec"
# PID 1 of every sandbox: reaps the orphans commands leave behind (they would count against
# the pids limit as zombies) and exits at once on SIGTERM. Given a directory and a port
# (allow_network, harness/sandbox/egress.py) it also pipes 127.0.0.1:port inside to the guard
# proxy's Unix socket in that directory: the newest socket that accepts.
_INIT_SOURCE = """
import os, signal, socket, sys, threading, time
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))

def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass

def upstream(directory):
    found = []
    for name in os.listdir(directory):
        try:
            found.append((os.stat(os.path.join(directory, name)).st_mtime, name))
        except OSError:
            pass
    for _, name in sorted(found, reverse=True):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(os.path.join(directory, name))
            return s
        except OSError:
            s.close()
    return None

def serve(client, directory):
    up = upstream(directory)
    if up is None:
        client.sendall(b"HTTP/1.1 502 Bad Gateway\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n")
        client.close()
        return
    back = threading.Thread(target=pipe, args=(up, client), daemon=True)
    back.start()
    pipe(client, up)
    back.join()
    client.close()
    up.close()

def forward(directory, port):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(128)
    while True:
        client, _ = server.accept()
        threading.Thread(target=serve, args=(client, directory), daemon=True).start()

if len(sys.argv) == 3:
    threading.Thread(target=forward, args=(sys.argv[1], int(sys.argv[2])), daemon=True).start()
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(1)
"""
INIT = ["/usr/bin/python3", "-c", _INIT_SOURCE]

_ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, ConnectionError, OSError)

# After the command ended: its output stream ends (EOF) when the last holder of its output
# closes it. A background child may hold it open: then the socket counts as read once nothing
# has been left unread on it for the grace period, and a child that keeps writing is cut off
# at the limit. Counted here, not by a fixed wait: a busy machine can leave the reader thread
# unscheduled for longer than any fixed wait, and its output would be lost.
_DRAIN_GRACE_SECONDS = 0.1
_DRAIN_LIMIT_SECONDS = 2.0
# How long the reader may take to feed what it holds once the socket is shut (a hang bound).
_READER_JOIN_SECONDS = 30.0


def _unread(raw) -> bool:
    try:
        readable, _, _ = select.select([raw], [], [], 0)
    except (OSError, ValueError):
        return False
    return bool(readable)


def _wait_until_read(raw, stream_done: threading.Event) -> None:
    deadline = time.monotonic() + _DRAIN_LIMIT_SECONDS
    quiet_since = None
    while not stream_done.wait(_DRAIN_GRACE_SECONDS / 2):
        now = time.monotonic()
        if _unread(raw):
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= _DRAIN_GRACE_SECONDS:
            return
        if now >= deadline:
            return


def default_engine_url() -> str:
    """$DOCKER_HOST, else Podman's root socket when it exists, else Docker's."""
    if os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"]
    for path in ("/run/podman/podman.sock", "/var/run/docker.sock"):
        if os.path.exists(path):
            return f"unix://{path}"
    return "unix:///var/run/docker.sock"


class EngineUnreachable(SandboxUnavailable):
    """The engine's socket does not answer."""


class ContainerGone(SandboxError):
    """The container vanished or stopped under a command (engine restart, removal)."""


class ContainerMissing(ContainerGone):
    """The container was gone before the command started, so nothing of it ran."""


class Engine:
    def __init__(self, url: str, *, timeout: float = 60.0):
        self.url = url
        self.timeout = timeout
        self._client: docker.DockerClient | None = None
        self._lock = threading.Lock()

    def unreachable(self, exc: BaseException) -> EngineUnreachable:
        return EngineUnreachable(
            f"Error: the container engine at {self.url} does not answer ({type(exc).__name__}: {exc}). "
            "Start it (`podman system service` or the Docker daemon) or set sandbox.engine_url."
        )

    @property
    def client(self) -> docker.DockerClient:
        with self._lock:
            if self._client is None:
                try:
                    self._client = docker.DockerClient(base_url=self.url, timeout=self.timeout)
                except _ENGINE_ERRORS as exc:
                    raise self.unreachable(exc) from exc
            return self._client

    def call(self, fn: Callable, *args, **kwargs):
        """Run one API call; a connection failure names the socket."""
        try:
            return fn(*args, **kwargs)
        except docker.errors.NotFound:
            raise
        except docker.errors.APIError:
            raise
        except _ENGINE_ERRORS as exc:
            raise self.unreachable(exc) from exc

    def ping(self) -> None:
        self.call(lambda: self.client.ping())

    def check_image(self, image: str) -> None:
        try:
            self.call(self.client.images.get, image)
        except docker.errors.ImageNotFound:
            raise SandboxUnavailable(
                f"Error: the sandbox image {image!r} is not in the container engine at {self.url}. "
                f"Build it on this machine with `{BUILD_COMMAND}` (as root; it needs no registry), "
                "or set sandbox.image to an image the engine has."
            ) from None

    def run(self, **spec) -> str:
        container = self.call(self.client.containers.run, detach=True, **spec)
        return container.name

    def list(self, prefix: str) -> list[dict]:
        """Our containers (running or not): name, state and labels."""
        items = self.call(self.client.api.containers, all=True, filters={"label": [f"{LABEL}=1", f"{LABEL_PREFIX}={prefix}"]})
        out = []
        for item in items:
            names = item.get("Names") or [""]
            out.append({"name": names[0].lstrip("/"), "state": item.get("State", ""), "labels": item.get("Labels") or {}})
        return out

    def running(self, name: str) -> bool:
        try:
            info = self.call(self.client.api.inspect_container, name)
        except docker.errors.NotFound:
            return False
        except docker.errors.APIError as exc:
            # Podman answers 500 for a container removed while it is being looked up.
            if "no such container" in str(exc).lower():
                return False
            raise
        return bool(info.get("State", {}).get("Running"))

    def remove(self, name: str) -> None:
        try:
            self.call(self.client.api.remove_container, name, force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if "no such container" not in str(exc).lower() and "removal" not in str(exc).lower():
                raise

    def stop(self, name: str, timeout: int = 2) -> None:
        try:
            self.call(self.client.api.stop, name, timeout=timeout)
        except docker.errors.NotFound:
            pass

    def _exec_inspect(self, exec_id: str) -> dict:
        try:
            return self.call(self.client.api.exec_inspect, exec_id)
        except docker.errors.NotFound:
            raise
        except docker.errors.APIError as exc:
            # Podman answers 500, not 404, for an exec whose container was removed meanwhile.
            if "no such container" in str(exc).lower():
                raise docker.errors.NotFound(str(exc)) from exc
            raise

    def _exec_create(self, name: str, argv: list[str], *, user: str, env: Mapping[str, str], workdir: str) -> str:
        try:
            return self.call(self.client.api.exec_create, name, argv, stdout=True, stderr=True, stdin=False,
                             user=user, environment=dict(env), workdir=workdir)["Id"]
        except docker.errors.NotFound:
            raise ContainerMissing(f"the sandbox container {name} is gone") from None
        except docker.errors.APIError as exc:
            if "not running" in str(exc).lower() or "is stopped" in str(exc).lower() or "state" in str(exc).lower():
                raise ContainerMissing(f"the sandbox container {name} is not running") from None
            raise

    def quick(self, name: str, argv: list[str], *, user: str = "0:0") -> tuple[int, str]:
        """A short helper command (kill, counters); its output is small."""
        exec_id = self._exec_create(name, argv, user=user, env={}, workdir="/")
        output = self.call(self.client.api.exec_start, exec_id)
        code = self.call(self.client.api.exec_inspect, exec_id).get("ExitCode")
        return (code if code is not None else -1), output.decode("utf-8", "replace")

    def execute(self, name: str, command: str, *, user: str, env: Mapping[str, str], workdir: str, timeout: float,
                max_chars: int, cancel: threading.Event | None = None,
                watch: Callable[[], str | None] | None = None) -> CommandResult:
        """``watch`` is polled while the command runs (the disk-quota watcher); a message stops it."""
        token = uuid.uuid4().hex
        pid_file = f"{_PID_DIR}/{token}"
        # setsid makes the command a session and process-group leader whose pid is $$ of the
        # inner shell; that pid is what the killer needs.
        argv = ["/usr/bin/setsid", "-w", "/bin/bash", "-c",
                f'mkdir -p {_PID_DIR} 2>/dev/null; echo $$ > {pid_file}; exec /bin/bash -c "$1"', "bash", command]
        started = time.monotonic()
        exec_id = self._exec_create(name, argv, user=user, env=env, workdir=workdir)
        try:
            sock = self.call(self.client.api.exec_start, exec_id, socket=True)
        except docker.errors.NotFound:
            raise ContainerGone(f"the sandbox container {name} is gone") from None
        raw = getattr(sock, "_sock", sock)
        capture = OutputCapture(max_chars)
        stream_done = threading.Event()

        def drain() -> None:
            try:
                for _stream, data in frames_iter(sock, tty=False):
                    capture.feed(data)
            except (OSError, ValueError):
                pass
            finally:
                stream_done.set()

        reader = threading.Thread(target=drain, name=f"sandbox-exec-{token[:8]}", daemon=True)
        reader.start()
        reason = ""
        limit_message = None
        next_check = started + 1.0
        gone = False
        while not stream_done.wait(0.05 if cancel is not None or watch is not None else 0.25):
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                reason = "cancelled"
            elif now - started >= timeout:
                reason = "timeout"
            elif watch is not None and (message := watch()):
                reason, limit_message = "limit", message
            if reason:
                self._kill(name, pid_file, user)
                break
            if now >= next_check:
                # The stream stays open while a background child holds the output pipe; the
                # exec's own state says when the command itself ended.
                next_check = now + 1.0
                try:
                    info = self._exec_inspect(exec_id)
                except (docker.errors.NotFound, SandboxUnavailable):
                    gone = True
                    break
                if not info.get("Running"):
                    _wait_until_read(raw, stream_done)
                    break
        try:
            raw.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        # Shut, not closed: the reader still gets what was sent before, then the end, and
        # stops; closed under it, it would lose what it had not read yet.
        reader.join(_READER_JOIN_SECONDS)
        try:
            sock.close()
        except OSError:
            pass
        code = None
        if not reason:
            try:
                code = self._exec_inspect(exec_id).get("ExitCode")
            except (docker.errors.NotFound, SandboxUnavailable):
                gone = True
        if gone or (not reason and not self.running(name)):
            raise ContainerGone(f"the sandbox container {name} stopped while the command ran")
        try:
            self.quick(name, ["/bin/rm", "-f", pid_file])
        except (SandboxError, docker.errors.APIError):
            pass
        return CommandResult(
            exit_code=None if reason else code, output=capture.close(), timed_out=reason == "timeout",
            timeout=timeout, duration=time.monotonic() - started, cancelled=reason == "cancelled",
            limit_message=limit_message,
        )

    def _kill(self, name: str, pid_file: str, user: str) -> None:
        # killpg from Python: the shells' kill builtins disagree on how to name a group.
        script = ("import os, sys\ntry:\n    os.killpg(int(open(sys.argv[1]).read()), 9)\n"
                  "except (OSError, ValueError):\n    pass\n")
        try:
            self.quick(name, ["/usr/bin/python3", "-c", script, pid_file], user=user)
        except (SandboxError, docker.errors.APIError):
            pass

    def oom_kills(self, name: str) -> int | None:
        """The memory cgroup's OOM-kill count as the container sees it (cgroup v1 or v2)."""
        script = ("cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || "
                  "cat /sys/fs/cgroup/memory.events 2>/dev/null")
        try:
            code, out = self.quick(name, ["/bin/sh", "-c", script])
        except (SandboxError, docker.errors.APIError):
            return None
        for line in out.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return None
