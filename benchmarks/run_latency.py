"""Run latency through the whole server: request -> first `messages` event and -> `end`,
then a burst of concurrent streamed runs.

Starts real Daphne servers whose lead agent has an instant scripted model, so what is
measured is the platform, not a provider.

    .venv/bin/python benchmarks/run_latency.py [--runs 30] [--burst 50] [--bursts 1]

``--stack embedded`` (default) is `make run`'s stack: one server, SQLite, runs in-process.
``--stack distributed`` is the scaled-out one: ``--servers`` Daphne processes (the client
spreads runs over them round-robin, as a load balancer would) and ``--workers`` Celery
worker processes executing the runs, events through Redis Streams; with ``--executor
embedded`` each server executes the runs it admitted instead (no Celery). It starts a
throwaway redis-server unless ``--redis-url`` is given. ``--postgres`` runs either stack on a throwaway
PostgreSQL cluster (initdb in a temp directory, fsync off, like the test tier), and
``--database-url`` on a database you give; the default is SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_support import INSTANT_CONFIG, instant_server_env, process_cpu_seconds, start_make_run_stack  # noqa: E402
from tests.support.live import start_live_server  # noqa: E402


BODY = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hi"}]}, "stream_mode": ["values", "messages-tuple"]}


async def one_run(client: httpx.AsyncClient) -> dict:
    thread = (await client.post("/threads", json={})).json()["thread_id"]
    start = time.perf_counter()
    first_event = first_message = None
    ok = False
    async with client.stream("POST", f"/threads/{thread}/runs/stream", json=BODY) as response:
        if response.status_code != 200:
            return {"error": response.status_code}
        async for line in response.aiter_lines():
            if not line.startswith("event: "):
                continue
            now = time.perf_counter() - start
            event = line[7:]
            first_event = first_event if first_event is not None else now
            if event == "messages" and first_message is None:
                first_message = now
            if event == "error":
                return {"error": "error event"}
            if event == "end":
                ok = True
                break
    end = time.perf_counter() - start
    return {"first_event": first_event, "first_message": first_message, "end": end} if ok else {"error": "no end"}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def start_redis(home: Path) -> tuple[str, subprocess.Popen]:
    if not shutil.which("redis-server"):
        raise SystemExit("--stack distributed needs redis-server (apt-get install redis-server) or --redis-url")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(home)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return f"redis://127.0.0.1:{port}/0", process
        except OSError:
            time.sleep(0.1)
    raise SystemExit("redis-server did not start")


def start_postgres(home: Path) -> tuple[str, Callable[[], None]]:
    """A throwaway cluster on a loopback port; PostgreSQL refuses root, so run as postgres."""
    import glob
    import os

    initdb = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[-1:]), None)
    if initdb is None:
        raise SystemExit("--postgres needs PostgreSQL's initdb (apt-get install postgresql)")
    bindir = Path(initdb).resolve().parent
    data = home / "pgdata"
    data.mkdir()
    as_pg: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
        shutil.chown(data, "postgres")
        as_pg = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
    subprocess.run([*as_pg, str(bindir / "initdb"), "-D", str(data), "-U", "deerflow", "--auth=trust", "-E", "UTF8"], **quiet)
    subprocess.run([*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(data / "server.log"), "-o",
                    f"-h 127.0.0.1 -p {port} -k {data} -c fsync=off -c synchronous_commit=off -c max_connections=300", "start"], **quiet)
    subprocess.run([*as_pg, str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "deerflow", "deerflow"], **quiet)

    def stop() -> None:
        subprocess.run([*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    return f"postgresql://deerflow@127.0.0.1:{port}/deerflow", stop


async def main(args: argparse.Namespace) -> dict:
    home = Path(tempfile.mkdtemp(prefix="deerflow-bench-"))
    env = instant_server_env()
    redis = None
    servers, workers = 1, 0
    if args.stack == "distributed":
        redis_url = args.redis_url
        if not redis_url:
            redis_url, redis = start_redis(home)
        env.update({"RUN_EXECUTOR": args.executor, "REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url})
        servers, workers = args.servers, (args.workers if args.executor == "celery" else 0)
    stop_postgres = None
    if args.postgres:
        env["DATABASE_URL"], stop_postgres = start_postgres(home)
    elif args.database_url:
        env["DATABASE_URL"] = args.database_url
    if args.stack == "embedded" and not args.postgres and not args.database_url:
        server = start_make_run_stack(home, config_text=INSTANT_CONFIG, extra_env=env, processes=args.web_processes)
    else:
        server = start_live_server(home, config_text=INSTANT_CONFIG, extra_env=env, servers=servers, celery_workers=workers,
                                   celery_concurrency=args.burst + 4)
    try:
        token = server.create_user_token("bench")
        headers = {"Authorization": f"Bearer {token}"}
        clients = [httpx.AsyncClient(base_url=f"{url}/api", headers=headers, timeout=120) for url in server.urls]
        next_client = itertools.cycle(clients).__next__
        try:
            for client in clients:
                for _ in range(3):  # warm-up: imports, first graph build, SQLite caches
                    await one_run(client)
            sequential = [await one_run(next_client()) for _ in range(args.runs)]
            errors = [r for r in sequential if "error" in r]
            good = [r for r in sequential if "error" not in r]
            # One burst lasts about two seconds, so a neighbour's load can halve its rate:
            # --bursts repeats it and reports every rate and their median.
            rates, results = [], []
            pids = getattr(server, "server_pids", None) or [server.process.pid, *(p.pid for p in server.others)]
            spy = None
            if args.profile:
                # py-spy (pip install py-spy) samples the server while it holds the GIL.
                spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--gil", "-r", "250", "-f", "raw",
                                        "-p", str(pids[0]), "-o", args.profile], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            cpu_before = process_cpu_seconds(pids)
            for _ in range(args.bursts):
                started = time.perf_counter()
                burst = await asyncio.gather(*(one_run(next_client()) for _ in range(args.burst)))
                rates.append(sum(1 for r in burst if "error" not in r) / (time.perf_counter() - started))
                results += burst
            cpu_per_run = (process_cpu_seconds(pids) - cpu_before) / max(1, len(results))
            if spy is not None:
                spy.send_signal(2)
                spy.wait(timeout=60)
        finally:
            for client in clients:
                await client.aclose()
        burst_good = [r for r in results if "error" not in r]
        report = {
            "stack": args.stack,
            "database": "postgresql" if "DATABASE_URL" in env else "sqlite",
            "servers": servers,
            "workers": workers,
            "executor": env.get("RUN_EXECUTOR", "embedded"),
            "sequential_runs": args.runs,
            "sequential_errors": len(errors),
            "end_ms_median": round(statistics.median(r["end"] for r in good) * 1000, 1),
            "first_message_ms_median": round(statistics.median(r["first_message"] for r in good) * 1000, 1),
            "first_event_ms_median": round(statistics.median(r["first_event"] for r in good) * 1000, 1),
            "burst_runs": args.burst,
            "bursts": args.bursts,
            "burst_errors": len(results) - len(burst_good),
            "burst_runs_per_s": round(statistics.median(rates), 1),
            # Every server and worker process, thread creation included (one_run makes one).
            "server_cpu_ms_per_run": round(cpu_per_run * 1000, 1),
            **({"burst_runs_per_s_each": [round(rate, 1) for rate in rates]} if args.bursts > 1 else {}),
            "burst_first_event_ms_p50": round(pct([r["first_event"] for r in burst_good], 50) * 1000, 1) if burst_good else None,
            "burst_first_event_ms_p99": round(pct([r["first_event"] for r in burst_good], 99) * 1000, 1) if burst_good else None,
        }
        return report
    finally:
        server.stop()
        if redis is not None:
            redis.terminate()
        if stop_postgres is not None:
            stop_postgres()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--bursts", type=int, default=1, help="bursts to run one after another; runs/s is their median")
    parser.add_argument("--stack", choices=["embedded", "distributed"], default="embedded")
    parser.add_argument("--servers", type=int, default=2, help="Daphne processes (distributed stack)")
    parser.add_argument("--web-processes", default="auto",
                        help="the embedded stack's servers on one port, as WEB_PROCESSES takes it (default auto, as make run)")
    parser.add_argument("--workers", type=int, default=1, help="Celery worker processes (distributed stack)")
    parser.add_argument("--executor", choices=["celery", "embedded"], default="celery",
                        help="distributed stack: runs on Celery workers, or in the server that admitted them")
    parser.add_argument("--redis-url", default="", help="use this Redis instead of starting one")
    parser.add_argument("--database-url", default="", help="e.g. postgresql://…; default a SQLite file")
    parser.add_argument("--postgres", action="store_true", help="start a throwaway PostgreSQL cluster and use it")
    parser.add_argument("--profile", default="", help="write a py-spy raw profile of the (first) server during the bursts here")
    arguments = parser.parse_args()
    if min(arguments.runs, arguments.burst, arguments.bursts) < 1:
        parser.error("--runs, --burst and --bursts must be at least 1")
    print(json.dumps(asyncio.run(main(arguments)), indent=2))
