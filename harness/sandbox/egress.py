"""The network of container sandboxes with ``allow_network``: out through the SSRF guard only.

The container keeps ``network: none``, so nothing in it can open a connection to anywhere. This
server process runs a :class:`~harness.net.proxy.GuardProxy` (the browser tool's proxy) on a
Unix socket in a directory that every container mounts read-only at :data:`CONTAINER_DIR`;
the container's init (``engine.INIT``) listens on ``127.0.0.1:PORT`` inside and pipes each
connection to that socket; commands get ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` pointing
there. A client that honours them (pip, curl, requests, urllib, git over https, npm) reaches
public hosts; private, loopback, link-local and metadata addresses are refused by the guard
(403) unless ``sandbox.allowed_private_networks`` opens them (metadata never); a client that
ignores them has no route at all. The proxy resolves each name itself and connects to the
address it checked, so the container needs no DNS.

Each server process listens on a socket of its own in the shared directory; the forwarder
tries the newest first and skips dead ones, so containers keep their way out when the process
that started them is gone and another serves the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import socket
import tempfile
import threading
from pathlib import Path

from harness.net.guard import GuardPolicy
from harness.net.proxy import GuardProxy

logger = logging.getLogger(__name__)

CONTAINER_DIR = "/run/deerflow-egress"
PORT = 3128
_MAX_SOCKET_PATH = 100  # AF_UNIX paths are at most 108 bytes


def egress_dir(home: Path) -> Path:
    directory = Path(home) / "sandbox" / "egress"
    if len(str(directory)) + 20 > _MAX_SOCKET_PATH:
        # A deep DEER_FLOW_HOME: a short directory of its own instead, still one per home.
        digest = hashlib.sha256(str(home).encode()).hexdigest()[:12]
        directory = Path(tempfile.gettempdir()) / f"deerflow-egress-{digest}"
    return directory


def proxy_env() -> dict[str, str]:
    url = f"http://127.0.0.1:{PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    # localhost in the container is the container: a server a command started there is reached
    # directly, never through the proxy (which would refuse loopback anyway).
    local = "localhost,127.0.0.1,::1"
    return {**{n: url for n in names}, **{n.lower(): url for n in names}, "NO_PROXY": local, "no_proxy": local}


class SandboxEgress:
    """One process's guard proxy on its own event loop thread."""

    def __init__(self, directory: Path, owner: str, policy: GuardPolicy):
        self.directory = Path(directory)
        self.path = self.directory / f"{hashlib.sha256(owner.encode()).hexdigest()[:12]}.sock"
        self.policy = policy
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proxy: GuardProxy | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            self._remove_dead()
            ready = threading.Event()
            failure: list[BaseException] = []
            self._thread = threading.Thread(target=self._serve, args=(ready, failure), name="sandbox-egress", daemon=True)
            self._thread.start()
            ready.wait(30)
            if failure:
                self._thread = None
                raise failure[0]

    def _serve(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._proxy = GuardProxy(self.policy)
            loop.run_until_complete(self._proxy.start(str(self.path)))
            # Containers may run as another uid than the server; what the socket gives is guarded anyway.
            os.chmod(self.path, 0o666)
        except BaseException as exc:  # noqa: BLE001 - handed to start()
            failure.append(exc)
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._proxy.close())
            loop.close()

    def _remove_dead(self) -> None:
        """Sockets of processes that are gone: nobody accepts on them any more."""
        for path in self.directory.glob("*.sock"):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(path))
            except ConnectionRefusedError:
                with contextlib.suppress(OSError):
                    path.unlink()
            except OSError:
                pass
            finally:
                probe.close()

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
        with contextlib.suppress(OSError):
            self.path.unlink()
