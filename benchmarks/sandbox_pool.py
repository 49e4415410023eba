"""First-command latency of a new thread in the container provider, with and without the warm pool.

Usage (root, Podman with its API service; the image from scripts/build_sandbox_image.sh):
    .venv/bin/python -m benchmarks.sandbox_pool [--engine-url unix:///run/podman/podman.sock] [--rounds 5]

Prints the median and the range of "acquire + first `echo`" for a thread that never ran,
once with replicas=0 (a container is started on the request path) and once with a warm pool
(started containers and formatted thread disks made ahead).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from harness.config.app_config import SandboxConfig
from harness.sandbox import disk
from harness.sandbox.container import ContainerSandboxProvider
from harness.sandbox.engine import default_engine_url
from harness.sandbox.ownership import MemoryOwnershipStore


def first_command(provider: ContainerSandboxProvider, thread: str) -> float:
    started = time.perf_counter()
    sandbox = provider.get(provider.acquire("bench", thread))
    result = sandbox.execute_command("echo ready")
    assert result.exit_code == 0
    return time.perf_counter() - started


def measure(url: str, image: str, replicas: int, rounds: int) -> list[float]:
    provider = ContainerSandboxProvider(SandboxConfig(use="container", engine_url=url, image=image, replicas=replicas,
                                                      container_prefix=f"dfbench{os.getpid()}"),
                                        store=MemoryOwnershipStore())
    try:
        provider.start()
        times = []
        for i in range(rounds):
            if replicas:
                provider.wait_for_pool(120)
            times.append(first_command(provider, f"r{replicas}-{i}"))
        return times
    finally:
        provider.shutdown()
        home = os.environ["DEER_FLOW_HOME"]
        for point in disk.mounts():  # the threads' disk images (docs/sandbox.md, "Thread disks")
            if point.startswith(home + "/"):
                disk.unmount(Path(point))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine-url", default=default_engine_url())
    parser.add_argument("--image", default="deerflow-sandbox:latest")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("DEER_FLOW_HOME", tempfile.mkdtemp(prefix="deerflow-bench-"))
    for label, replicas in (("no pool (replicas: 0)", 0), ("warm pool (replicas: 2)", 2)):
        times = measure(args.engine_url, args.image, replicas, args.rounds)
        print(f"{label:26} first command: median {statistics.median(times) * 1000:.0f} ms, "
              f"range {min(times) * 1000:.0f}-{max(times) * 1000:.0f} ms over {len(times)} new threads")


if __name__ == "__main__":
    main()
