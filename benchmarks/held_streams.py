"""Held streams: many concurrent runs on a slow model, through `make run`'s stack.

Starts a loopback OpenAI-compatible server whose every answer takes ``--seconds`` S, and one
real Daphne server (SQLite, runs in the process) whose lead agent calls it through
``ChatOpenAI``, as a real provider would be called. Runs then start at a steady rate of N/S
per second, each streaming its events (``values`` and ``messages-tuple``), so N runs are in
flight once the ramp is over. Prints:

- errors (non-200 answers, streams without ``end``, runs that ended in error);
- overhead per run: request -> ``end`` minus S (p50, p99, max), and where it went: the p50
  and p99 of each phase (``PHASES``: the run's thread created, its request accepted, its
  first event, the model's first token, ``end``);
- the server's resident memory before the runs, at its peak, and the growth per held run.

    .venv/bin/python benchmarks/held_streams.py [--runs 500] [--seconds 5] [--at-once]

``--at-once`` sends every run at the same moment instead (a burst of users, a script, a
scheduler's firing); the overhead then includes the queueing that burst causes.

Issue 18's budget: 500 runs of 5 s, 0 errors, overhead p99 <= 1.5 s, RSS growth <= 0.5 MB
per held run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_support import instant_server_env, process_cpu_seconds, start_make_run_stack  # noqa: E402
from harness.testing import LoopbackOpenAIServer, Reply  # noqa: E402
from tests.support.live import start_live_server  # noqa: E402

BODY = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hi"}]},
        "stream_mode": ["values", "messages-tuple"]}


ANSWER = "A slow answer from the benchmark model."
CONNECTIONS_PER_CLIENT = 25

_MODEL_PROCESS = """
import sys, threading
from harness.testing import LoopbackOpenAIServer, Reply
server = LoopbackOpenAIServer([Reply(text=sys.argv[2], delay=float(sys.argv[1]))], loop=True).start()
print(server.base_url, flush=True)
threading.Event().wait()
"""


class ModelProcess:
    """The loopback model in a process of its own: 500 answer threads sharing this process's
    GIL with 500 streaming clients measured the benchmark as much as the server."""

    def __init__(self, seconds: float, code: str = _MODEL_PROCESS, answer: str = ANSWER):
        """``code``: the process's program, given the seconds and the answer as its arguments."""
        self.process = subprocess.Popen([sys.executable, "-c", code, str(seconds), answer], cwd=ROOT,
                                        stdout=subprocess.PIPE, text=True)
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url:
            raise RuntimeError("the loopback model process did not start")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


def config_text(base_url: str) -> str:
    return f"""\
config_version: 1
models:
  - name: slow
    use: langchain_openai:ChatOpenAI
    model: test-model
    base_url: {base_url}
    api_key: unused
    max_retries: 0
    timeout: 300
sandbox:
  use: local
"""


def rss_kb(pid: int) -> tuple[int, int]:
    """(current, peak) resident set of a process, in kB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


async def one_run(client: httpx.AsyncClient, delay_s: float) -> dict:
    begun = time.perf_counter()
    thread = (await client.post("/threads", json={})).json()["thread_id"]
    start = time.perf_counter()
    ended = False
    status = None
    # Seconds from the run's request to each phase (see PHASES).
    phases = {"thread": start - begun}
    try:
        async with client.stream("POST", f"/threads/{thread}/runs/stream", json=BODY) as response:
            status = response.status_code
            phases["accepted"] = time.perf_counter() - start
            event = None
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                    phases.setdefault("first_event", time.perf_counter() - start)
                    if event == "messages" and "model_answered" not in phases:
                        phases["model_answered"] = time.perf_counter() - start - delay_s
                    if event == "end":
                        ended = True
                elif line.startswith("data: ") and event == "error":
                    return {"error": f"error event: {line[6:200]}"}
    except httpx.HTTPError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    if status != 200 or not ended:
        return {"error": f"status {status}, end seen: {ended}"}
    phases["end"] = time.perf_counter() - start - delay_s
    phases["thread_to_end"] = phases["thread"] + phases["end"]
    return {"overhead": phases["end"], "phases": phases}


# Where a run's overhead goes, each a p50/p99 over the runs: ``thread`` its thread's creation
# (before the run's request, so not in the overhead); from the run's request: ``accepted`` its
# answer's headers, ``first_event`` the stream's first event, ``model_answered`` the model's
# first token minus S (how late the model was called), ``end`` the overhead itself; and
# ``thread_to_end``, from the thread's request to ``end`` minus S: what a user who opens a new
# chat in the burst waits beyond the model.
PHASES = ("thread", "accepted", "first_event", "model_answered", "end", "thread_to_end")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


async def run(args: argparse.Namespace, base_urls: list[str], token: str, pids: list[int]) -> dict:
    # httpx looks through a client's whole pool for each request: one client holding 500 open
    # streams spent more CPU than the server it measured. Runs are spread over small pools.
    pools = max(1, args.runs // CONNECTIONS_PER_CLIENT)
    per_pool = args.runs // pools * 2 + 10
    limits = httpx.Limits(max_connections=per_pool, max_keepalive_connections=per_pool)
    clients = [httpx.AsyncClient(base_url=f"{url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=args.seconds + 120,
                                 limits=limits) for url in base_urls for _ in range(pools)]
    next_client = itertools.cycle(clients).__next__
    pid = pids[0]
    try:
        for client in clients[:: max(1, len(clients) // len(base_urls))]:
            for _ in range(3):  # warm-up: imports, first graph build, the model client's connections
                await one_run(client, args.seconds)
        rss_before = sum(rss_kb(p)[0] for p in pids)
        peak = [rss_before]
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(0.2):
                peak[0] = max(peak[0], sum(rss_kb(p)[0] for p in pids))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        spy = None
        if args.profile:  # py-spy (pip install py-spy): the server while it holds the GIL
            spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--gil", "-r", "250", "-f", "raw",
                                    "-p", str(pid), "-o", args.profile], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        start_load = round(os.getloadavg()[0], 1)
        interval = 0.0 if args.at_once else args.seconds / args.runs
        cpu_before, own_before = process_cpu_seconds(pids), time.process_time()
        each_before = [process_cpu_seconds([p]) for p in pids]
        started = time.perf_counter()
        tasks = []
        for i in range(args.runs):
            if interval:
                await asyncio.sleep(max(0.0, started + i * interval - time.perf_counter()))
            tasks.append(asyncio.create_task(one_run(next_client(), args.seconds)))
        results = await asyncio.gather(*tasks)
        server_cpu, own_cpu = process_cpu_seconds(pids) - cpu_before, time.process_time() - own_before
        each = [round(process_cpu_seconds([p]) - b, 2) for p, b in zip(pids, each_before)]
        if spy is not None:
            spy.send_signal(2)
            spy.wait(timeout=60)
        stop.set()
        watcher.join()
    finally:
        for client in clients:
            await client.aclose()
    good = [r["overhead"] for r in results if "overhead" in r]
    errors = [r["error"] for r in results if "error" in r]
    return {
        "runs": args.runs,
        "arrivals": "at once" if args.at_once else f"spread over {args.seconds} s",
        "load": [start_load, round(os.getloadavg()[0], 1)],
        "server_processes": len(pids),
        "model_seconds": args.seconds,
        "errors": len(errors),
        **({"first_errors": errors[:3]} if errors else {}),
        "overhead_s_p50": round(statistics.median(good), 3) if good else None,
        "overhead_s_p99": round(pct(good, 99), 3) if good else None,
        "overhead_s_max": round(max(good), 3) if good else None,
        "phases_s_p50_p99": {phase: [round(statistics.median(values), 3), round(pct(values, 99), 3)]
                             for phase in PHASES if (values := [r["phases"][phase] for r in results if phase in r.get("phases", {})])},
        "rss_mb_before": round(rss_before / 1024, 1),
        "rss_mb_peak": round(peak[0] / 1024, 1),
        "rss_mb_growth_per_held_run": round((peak[0] - rss_before) / 1024 / args.runs, 3),
        # The machine's two cores are shared: what the server spent, and what this process
        # (the clients and the loopback model) spent beside it.
        "server_cpu_ms_per_run": round(server_cpu * 1000 / args.runs, 1),
        "benchmark_cpu_ms_per_run": round(own_cpu * 1000 / args.runs, 1),
        "server_cpu_s_each_process": each,  # how evenly the servers shared the work
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--web-processes", default="auto", help="servers on one port, as WEB_PROCESSES takes it (default auto, as make run)")
    parser.add_argument("--servers", type=int, default=1, help="instead: this many Daphne processes on ports of their own (the client alternates)")
    parser.add_argument("--at-once", action="store_true", help="send every run at the same moment instead of at N/S per second")
    parser.add_argument("--profile", default="", help="write a py-spy raw profile of the server during the runs here")
    parser.add_argument("--model-process", action=argparse.BooleanOptionalAction, default=True,
                        help="the loopback model in a process of its own, as a remote provider would be (default); "
                             "--no-model-process keeps it in this process, beside the clients, as before 2026-12-01's eighth round")
    args = parser.parse_args(argv)
    if args.model_process:
        model = ModelProcess(args.seconds)
    else:
        model = LoopbackOpenAIServer([Reply(text=ANSWER, delay=args.seconds)], loop=True).start()
    home = Path(tempfile.mkdtemp(prefix="deerflow-held-"))
    env = {k: v for k, v in instant_server_env().items() if k != "DEERFLOW_AGENT_FACTORY"}  # the real lead agent
    if args.servers > 1:
        server = start_live_server(home, config_text=config_text(model.base_url), extra_env=env, servers=args.servers)
    else:
        server = start_make_run_stack(home, config_text=config_text(model.base_url), extra_env=env, processes=args.web_processes)
    try:
        token = server.create_user_token("bench")
        pids = getattr(server, "server_pids", None) or [server.process.pid, *(p.pid for p in server.others)]
        report = asyncio.run(run(args, server.urls, token, pids))
        print(json.dumps(report, indent=2))
        return report
    finally:
        server.stop()
        model.stop()


if __name__ == "__main__":
    main()
