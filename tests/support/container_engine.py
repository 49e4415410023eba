"""A real container engine for the container-provider tests: Podman's Docker-API service.

Started once per test process on a private socket (``podman --runtime runc --cgroup-manager
cgroupfs system service``), with the sandbox image built by scripts/build_sandbox_image.sh
(a no-op when the image of the same inputs is already in Podman's store). Every container the
tests start carries a per-process prefix label; they are all removed when the process ends,
and :func:`remove_test_containers` removes them after each test, pass or fail.

Tests skip with the reason only where Podman truly cannot run (not installed, not root).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import docker
import pytest

from harness.sandbox import disk

REPO = Path(__file__).resolve().parents[2]
PREFIX = f"dftest{os.getpid()}"
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]

_lock = threading.Lock()
_state: dict[str, str] = {}
_service: subprocess.Popen | None = None


def skip_reason() -> str | None:
    if shutil.which("podman") is None or shutil.which("runc") is None:
        return "podman and runc are not installed (scripts/bootstrap.sh test installs them)"
    if os.geteuid() != 0:
        return "the container tests need root: rootful Podman and host bind mounts for the warm pool"
    if shutil.which("debootstrap") is None:
        return "debootstrap is not installed (scripts/bootstrap.sh test installs it)"
    return None


def _wait_for_the_suites_build() -> None:
    """`make test` starts the image build as the suite starts (scripts/test.sh), so that a cold
    build overlaps with other tests; wait for it to end. The build script below is then a no-op."""
    started = os.environ.get("DEERFLOW_TEST_SANDBOX_IMAGE_BUILD")
    if not started:
        return
    rc_file, deadline = Path(f"{started}.rc"), time.monotonic() + 1800
    while not rc_file.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the suite's sandbox image build did not end: {Path(f'{started}.log').read_text()[-2000:]}")
        time.sleep(1)
    if rc_file.read_text().strip() not in ("", "0"):
        raise RuntimeError(f"building the sandbox image failed:\n{Path(f'{started}.log').read_text()[-4000:]}")


def _image() -> str:
    _wait_for_the_suites_build()
    done = subprocess.run([str(REPO / "scripts" / "build_sandbox_image.sh")], cwd=REPO, capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"building the sandbox image failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout.strip().splitlines()[-1].split()[0]


def _spawn(url: str) -> None:
    """Start the API service on ``url`` and wait until it answers."""
    global _service
    # In its own directory: conmon, the service's child, writes a file named `oom` into its
    # working directory when a container's cgroup OOM-kills a process (the memory test does).
    _service = subprocess.Popen([*PODMAN, "system", "service", "--time=0", url], cwd=os.path.dirname(url[len("unix://"):]),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            docker.DockerClient(base_url=url, timeout=5).ping()
            return
        except Exception:
            if time.monotonic() > deadline or _service.poll() is not None:
                raise RuntimeError("podman system service did not answer on its socket") from None
            time.sleep(0.1)


def _start_service() -> str:
    directory = tempfile.mkdtemp(prefix="deerflow-podman-")
    url = f"unix://{os.path.join(directory, 'podman.sock')}"
    atexit.register(_stop_service, directory)
    _spawn(url)
    return url


def _stop_service(directory: str) -> None:
    remove_test_containers()
    if _service is not None and _service.poll() is None:
        _service.terminate()
        try:
            _service.wait(10)
        except subprocess.TimeoutExpired:
            _service.kill()
    shutil.rmtree(directory, ignore_errors=True)


def engine() -> tuple[str, str]:
    """(engine url, image tag), starting and building on first use; skips where Podman cannot run."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with _lock:
        if not _state:
            _state["image"] = _image()
            _state["url"] = _start_service()
        return _state["url"], _state["image"]


def stop_service() -> None:
    """Stop the engine's API service (the containers keep running, as with a Docker daemon's live-restore)."""
    if _service is not None and _service.poll() is None:
        _service.terminate()
        _service.wait(10)


def start_service() -> None:
    """Start the API service again on the same socket."""
    if _service is None or _service.poll() is not None:
        _spawn(_state["url"])


def restart_service() -> None:
    """Stop and start the engine's API service on the same socket (an engine restart)."""
    stop_service()
    start_service()


def listed_containers() -> list[str]:
    done = subprocess.run([*PODMAN, "ps", "-a", "--filter", f"label=deerflow.sandbox.prefix={PREFIX}", "--format",
                           "{{.Names}}"], capture_output=True, text=True, timeout=60)
    return [line for line in done.stdout.split() if line]


def remove_test_containers() -> None:
    names = listed_containers()
    if names:
        subprocess.run([*PODMAN, "rm", "-f", "-t", "0", *names], capture_output=True, timeout=120)


def unmount_thread_disks(home: Path) -> None:
    """Unmount the threads' disk images (harness/sandbox/disk.py) the provider mounted under ``home``."""
    for point in disk.mounts():
        if point.startswith(f"{os.path.realpath(home)}/"):
            disk.unmount(Path(point))
