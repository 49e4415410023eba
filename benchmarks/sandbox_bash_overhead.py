"""Overhead of one ``bash`` call (``echo hi``) on each sandbox provider.

Usage: .venv/bin/python benchmarks/sandbox_bash_overhead.py [--runs 50]

Reports the median and p90 wall time of ``Sandbox.execute_command`` and of the ``bash``
tool (path checks, env scrub, formatting and masking included) per provider, in a
throw-away DEER_FLOW_HOME. The bubblewrap provider is skipped, with the reason, where it
cannot run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _time(fn, runs: int) -> list[float]:
    for _ in range(3):  # warm-up: first exec pays for page-cache misses
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"median {statistics.median(ordered):6.2f} ms   p90 {p90:6.2f} ms   min {ordered[0]:6.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    os.environ["DEER_FLOW_HOME"] = tempfile.mkdtemp(prefix="deerflow-bench-")

    from langchain.tools import ToolRuntime

    from harness.config.app_config import SandboxConfig
    from harness.sandbox import set_sandbox_provider
    from harness.sandbox.bwrap import BwrapSandboxProvider, probe_bwrap
    from harness.tools.sandbox_tools import bash_tool

    from harness.sandbox.local import LocalSandboxProvider

    print(f"{args.runs} runs of `echo hi` each, after 3 warm-up runs; {os.cpu_count()} CPUs")
    for name, cls in (("local", LocalSandboxProvider), ("bwrap", BwrapSandboxProvider)):
        if cls is BwrapSandboxProvider:
            ok, reason = probe_bwrap()
            if not ok:
                print(f"{name:6} skipped: {reason}")
                continue
        provider = cls(SandboxConfig())
        set_sandbox_provider(provider)
        sandbox = provider.get(provider.acquire("bench", "bench-thread"))
        runtime = ToolRuntime(state={}, context={"user_id": "bench", "thread_id": "bench-thread"}, config={},
                              stream_writer=lambda _: None, tool_call_id="bench", store=None)
        result = sandbox.execute_command("echo hi")
        assert result.exit_code == 0 and result.output.render().strip() == "hi", result
        raw = _time(lambda: sandbox.execute_command("echo hi"), args.runs)
        tool = _time(lambda: bash_tool.func(description="bench", command="echo hi", runtime=runtime), args.runs)
        print(f"{name:6} execute_command: {_summary(raw)}")
        print(f"{name:6} bash tool:       {_summary(tool)}")
    set_sandbox_provider(None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
