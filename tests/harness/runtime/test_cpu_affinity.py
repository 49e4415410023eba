"""CPU pinning: processes share out the cores through lock files, children get every core back.

Each case pins a separate Python process: pinning is for the life of a process, and the test
process itself must stay free.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.runtime import cpu_affinity

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(
    not cpu_affinity.supported() or len(os.sched_getaffinity(0)) < 2, reason="needs sched_setaffinity, flock and two or more cores"
)

# Pins itself, starts a thread, reports every thread's cores and a sandbox command's, then waits
# for a line on stdin (so the test controls how long it holds its core).
PROBE = textwrap.dedent("""
    import json, os, sys, threading
    from pathlib import Path
    from harness.runtime import cpu_affinity
    from harness.sandbox.process import run_command

    early = threading.Thread(target=threading.Event().wait, daemon=True)
    early.start()  # started before pinning: must be moved too
    cpu = cpu_affinity.pin_to_one_cpu(Path(sys.argv[1]))
    late = threading.Thread(target=threading.Event().wait, daemon=True)
    late.start()
    threads = {tid: sorted(os.sched_getaffinity(int(tid))) for tid in os.listdir("/proc/self/task")}
    child = run_command([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                        cwd=".", env=dict(os.environ), timeout=20, max_chars=1000)
    forked = os.fork()
    if forked == 0:
        os.write(1, (json.dumps({"forked": sorted(os.sched_getaffinity(0))}) + "\\n").encode())
        os._exit(0)
    os.waitpid(forked, 0)
    print(json.dumps({"cpu": cpu, "threads": threads, "child": child.output.render().strip(), "after": sorted(os.sched_getaffinity(0))}), flush=True)
    sys.stdin.readline()
""")


def _start(lock_dir: Path) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([sys.executable, "-c", PROBE, str(lock_dir)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    report: dict = {}
    for line in proc.stdout:  # the forked child's line, then the parent's
        report.update(json.loads(line))
        if "cpu" in report:
            return proc, report
    raise AssertionError(f"probe exited early with {proc.wait()}")


def _stop(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    proc.wait(timeout=20)


def test_processes_take_one_free_core_each_and_children_get_every_core(tmp_path):
    cores = sorted(os.sched_getaffinity(0))
    procs = []
    try:
        reports = []
        for _ in cores:
            proc, report = _start(tmp_path)
            procs.append(proc)
            reports.append(report)
        taken = [r["cpu"] for r in reports]
        assert sorted(taken) == cores  # one core each, none shared
        for report in reports:
            assert all(allowed == [report["cpu"]] for allowed in report["threads"].values()), report
            assert report["after"] == [report["cpu"]]
            # A sandbox command and a forked child are not confined to the server's core.
            assert report["child"] == str(cores)
            assert report["forked"] == cores

        # Every core taken: the next process stays on all of them rather than double up.
        extra, report = _start(tmp_path)
        procs.append(extra)
        assert report["cpu"] is None
        assert all(allowed == cores for allowed in report["threads"].values())
    finally:
        for proc in procs:
            _stop(proc)


def test_a_core_is_free_again_when_its_process_exits(tmp_path):
    cores = sorted(os.sched_getaffinity(0))
    holders = [_start(tmp_path) for _ in cores]
    leaving, report = holders.pop()
    freed = report["cpu"]
    _stop(leaving)
    try:
        # The only free core is the one given back (the kernel drops the lock with the process).
        newcomer, report = _start(tmp_path)
        _stop(newcomer)
        assert report["cpu"] == freed
    finally:
        for proc, _ in holders:
            _stop(proc)
