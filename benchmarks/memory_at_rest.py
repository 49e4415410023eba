"""`make run`'s processes at rest: proportional (PSS) and resident (RSS) memory, and CPU, per process.

Starts what scripts/run.sh starts, with config.example.yaml as it ships (its model pointed at
an unused loopback address): the web processes' launcher, its Daphne servers
(``WEB_PROCESSES`` auto) and the Celery worker with its embedded beat (the launcher's
``--also-run``, with scripts/run.sh's arguments). Once every process
has listened and ``--settle`` seconds have passed it reads ``/proc/<pid>/smaps_rollup``;
``--runs N`` first sends N runs through the site (they fail at the unreachable model, which
is enough to import and build what a run needs) and reads again after they settle.

PSS shares each page among the processes mapping it, so the PSS column adds up to what the
stack costs the machine; RSS counts shared pages once per process. ``idle``: the CPU each
process spends at rest (the servers' timers and polls, the worker's beat), over
``--idle-seconds`` right after the first reading, in ms per second.

    .venv/bin/python benchmarks/memory_at_rest.py [--settle 15] [--idle-seconds 30] [--runs 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_support import process_cpu_seconds, start_make_run_stack  # noqa: E402


def smaps(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        fields[name.strip()] = int(rest.split()[0]) / 1024
    return {"pss_mb": round(fields["Pss"], 1), "rss_mb": round(fields["Rss"], 1)}


def command(pid: int, worker: int | None = None) -> str:
    # A process forked from the launcher keeps the launcher's command line: the worker is told
    # by its pid, its beat by being the worker's child, the servers by being the launcher's.
    if pid == worker:
        return "celery"
    if worker is not None and parent(pid) == worker:
        return "celery beat"
    parts = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    text = " ".join(p.decode(errors="replace") for p in parts if p)
    for marker in ("web_processes", "celery", "daphne"):
        if marker in text:
            if marker == "web_processes" and command(parent(pid)) == "web_processes":
                return "daphne"
            return marker
    return text[:60]


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def descendants(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            out += [int(child), *descendants(int(child))]
    return out


def reading(pids: list[int], worker: int | None) -> dict:
    rows = []
    for pid in pids:
        try:
            rows.append({"pid": pid, "process": command(pid, worker), **smaps(pid)})
        except FileNotFoundError:  # a short-lived child (a probe) that ended meanwhile
            continue
    return {"processes": rows, "pss_mb_total": round(sum(r["pss_mb"] for r in rows), 1),
            "rss_mb_total": round(sum(r["rss_mb"] for r in rows), 1), "load": round(os.getloadavg()[0], 1)}


def idle_cpu(pids: list[int], worker: int | None, seconds: float) -> dict:
    before = {pid: process_cpu_seconds([pid]) for pid in pids}
    time.sleep(seconds)
    rows = [{"pid": pid, "process": command(pid, worker), "cpu_ms_per_s": round((process_cpu_seconds([pid]) - cpu) * 1000 / seconds, 2)}
            for pid, cpu in before.items()]
    return {"processes": rows, "cpu_ms_per_s_total": round(sum(r["cpu_ms_per_s"] for r in rows), 2), "seconds": seconds,
            "load": round(os.getloadavg()[0], 1)}


def once(args: argparse.Namespace) -> dict:
    home = Path(tempfile.mkdtemp(prefix="deerflow-rest-"))
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "unused", "DJANGO_DEBUG": "true"}
    worker = (f"celery -A deerflow_site worker --beat --pool threads --concurrency 4 --without-mingle --without-gossip"
              f" --loglevel warning --hostname bench{os.getpid()}@%h")
    server = start_make_run_stack(home, config_text=(ROOT / "config.example.yaml").read_text(), extra_env=env, also_run=worker)
    try:
        time.sleep(args.settle)
        pids = [server.process.pid, *descendants(server.process.pid)]
        out = {"started": reading(pids, server.also_pid)}
        if args.idle_seconds:
            out["idle"] = idle_cpu(pids, server.also_pid, args.idle_seconds)
        if args.runs:
            token = server.create_user_token("bench")
            with httpx.Client(base_url=f"{server.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
                for _ in range(args.runs):
                    thread = client.post("/threads", json={}).json()["thread_id"]
                    client.post(f"/threads/{thread}/runs/wait", json={"assistant_id": "lead_agent",
                                                                      "input": {"messages": [{"role": "user", "content": "hi"}]}})
            time.sleep(args.settle)
            out[f"after_{args.runs}_runs"] = reading(pids, server.also_pid)
        return out
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--idle-seconds", type=float, default=30.0, help="how long to read the CPU at rest (0: not read)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for _ in range(args.repeats):  # each as it is read: a slow machine may stop the script midway
        print(json.dumps(once(args)), flush=True)


if __name__ == "__main__":
    main()
