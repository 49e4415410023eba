"""What a user's `make run` spends: config.example.yaml's defaults, the real OpenAI client.

The server is `make run`'s web processes (``WEB_PROCESSES`` auto, SQLite, runs in the process,
``DJANGO_DEBUG`` on and ``LOG_LEVEL`` INFO as `make run` has them) reading config.example.yaml
as it ships: titles and memory on (memory's 30 s debounce included), its one model
(``langchain_openai:ChatOpenAI``) pointed by ``OPENAI_BASE_URL`` at a loopback
OpenAI-compatible server in a process of its own, which answers each chat call after
``--model-seconds`` and each memory update with a small JSON object. No agent factory of the
benchmarks': the lead agent is built as for a user.

Three measurements, each ``--repeats`` times:

- ``burst``: ``--runs`` runs on new threads, all sent at once (``at_once``) or at a steady rate
  over ``--spread-seconds`` (``spread``). Server CPU per run counts everything from the first
  request until every thread's memory update is applied (the debounce waited out), less what
  the idle server spends in as long (measured before), divided by the runs.
- ``long_thread``: one thread holding 20 messages and one holding 600 (their histories written
  through ``POST /threads/{id}/state``), a turn on each in turn; server CPU per turn and the
  ratio of the two.
- the machine's load average at the start and the end of each measurement.

    .venv/bin/python benchmarks/user_setup.py [--runs 50] [--repeats 3] [--only burst|long_thread]

Figures go to docs/runs.md's table and benchmarks/HISTORY.md, with the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import held_streams  # noqa: E402
from benchmarks.bench_support import process_cpu_seconds, start_make_run_stack  # noqa: E402

ANSWER = "An answer from the benchmark model, a sentence or two long, as a chat model would give."
BODY = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "What is a good name for a cat?"}]},
        "stream_mode": ["values", "messages-tuple"]}

_MODEL_PROCESS = """
import json, sys, threading
from harness.testing import LoopbackOpenAIServer, Reply
seconds, answer = float(sys.argv[1]), sys.argv[2]
memory = Reply(text=json.dumps({"user": {"topOfMind": "naming a cat"}, "newFacts": [], "factsToRemove": []}))
chat = Reply(text=answer, delay=seconds)

def reply(messages):
    first = str(messages[0].get("content", "")) if messages else ""
    return memory if first.startswith("You maintain the long-term memory") else chat

server = LoopbackOpenAIServer([reply], loop=True).start()
print(server.base_url, flush=True)
threading.Event().wait()
"""


class ModelProcess(held_streams.ModelProcess):
    def __init__(self, seconds: float):
        super().__init__(seconds, code=_MODEL_PROCESS, answer=ANSWER)


def load() -> float:
    return round(os.getloadavg()[0], 1)


def start_server(base_url: str, home: Path, processes: str):
    env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "unused", "OPENAI_MODEL": "test-model",
           # `make run`'s own defaults (scripts/run.sh, settings): a local server, INFO logs
           "DJANGO_DEBUG": "true", "LOG_LEVEL": "INFO", "DJANGO_LOG_LEVEL": "INFO", "CONFIG_RECHECK_SECONDS": "1",
           "CPU_PINNING": os.environ.get("CPU_PINNING", "true")}
    return start_make_run_stack(home, config_text=(ROOT / "config.example.yaml").read_text(), extra_env=env, processes=processes)


async def one_run(client: httpx.AsyncClient, thread: str | None = None, text: str | None = None) -> dict:
    if thread is None:
        thread = (await client.post("/threads", json={})).json()["thread_id"]
    body = BODY if text is None else {**BODY, "input": {"messages": [{"role": "user", "content": text}]}}
    start = time.perf_counter()
    async with client.stream("POST", f"/threads/{thread}/runs/stream", json=body) as response:
        if response.status_code != 200:
            return {"error": f"status {response.status_code}"}
        event = None
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                event = line[7:]
                if event == "end":
                    return {"seconds": time.perf_counter() - start, "thread": thread}
            elif line.startswith("data: ") and event == "error":
                return {"error": line[6:200]}
    return {"error": "no end"}


async def burst(client: httpx.AsyncClient, pids: list[int], runs: int, spread_seconds: float, debounce: float) -> dict:
    idle_window = 5.0
    before = process_cpu_seconds(pids)
    await asyncio.sleep(idle_window)
    idle_rate = (process_cpu_seconds(pids) - before) / idle_window
    start_load = load()
    started = time.monotonic()
    cpu_before = process_cpu_seconds(pids)

    async def later(i: int) -> dict:
        if spread_seconds:
            await asyncio.sleep(i * spread_seconds / runs)
        return await one_run(client)

    results = await asyncio.gather(*(later(i) for i in range(runs)))
    runs_done = time.monotonic()
    # memory's debounce: each thread's update is due debounce seconds after its run
    await asyncio.sleep(debounce + 3)
    waited = await _settle(client, pids)
    elapsed = time.monotonic() - started
    spent = process_cpu_seconds(pids) - cpu_before
    errors = [r["error"] for r in results if "error" in r]
    took = sorted(r["seconds"] for r in results if "seconds" in r)
    return {"runs": runs, "errors": len(errors), **({"first_error": errors[0]} if errors else {}),
            "server_cpu_ms_per_run": round((spent - idle_rate * elapsed) * 1000 / runs, 1),
            "server_cpu_ms_per_run_raw": round(spent * 1000 / runs, 1),
            "idle_cpu_ms_per_s": round(idle_rate * 1000, 2),
            "request_to_end_s_p50": round(statistics.median(took), 3) if took else None,
            "request_to_end_s_max": round(took[-1], 3) if took else None,
            "all_ended_after_s": round(runs_done - started, 2), "settle_wait_s": waited,
            "load": [start_load, load()]}


async def _settle(client: httpx.AsyncClient, pids: list[int]) -> float:
    """Wait until the servers go quiet (the memory updates applied): CPU below 5 % for 2 s."""
    start = time.monotonic()
    last = process_cpu_seconds(pids)
    while time.monotonic() - start < 120:
        await asyncio.sleep(2)
        now = process_cpu_seconds(pids)
        if now - last < 0.1:
            break
        last = now
    return round(time.monotonic() - start, 1)


def history(pairs: int) -> list[dict]:
    out = []
    for i in range(pairs):
        out.append({"type": "human", "content": f"Question {i}: what should I know about topic {i}? " * 2, "id": f"seed-h{i}"})
        out.append({"type": "ai", "content": f"Answer {i}: " + "a few sentences about the topic, as a model answers. " * 4,
                    "id": f"seed-a{i}"})
    return out


async def long_thread(client: httpx.AsyncClient, pids: list[int], turns: int) -> dict:
    threads = {}
    for size in (20, 600):
        thread = (await client.post("/threads", json={})).json()["thread_id"]
        response = await client.post(f"/threads/{thread}/state", json={"values": {"messages": history(size // 2)}})
        if response.status_code != 200:
            raise RuntimeError(f"seeding a thread of {size}: {response.status_code} {response.text[:200]}")
        threads[size] = thread
    for size, thread in threads.items():  # the first turn of each: the title, caches
        await one_run(client, thread, "hello again")
    start_load = load()
    # /proc counts CPU in 10 ms ticks: each size's turns are summed, then divided
    cpu = {20: 0.0, 600: 0.0}
    for i in range(turns):
        for size, thread in threads.items():
            before = process_cpu_seconds(pids)
            result = await one_run(client, thread, f"turn {i}: one more question")
            if "error" in result:
                raise RuntimeError(f"turn {i} on the {size}-message thread: {result['error']}")
            cpu[size] += (process_cpu_seconds(pids) - before) * 1000
    small, large = cpu[20] / turns, cpu[600] / turns
    return {"turns": turns, "server_cpu_ms_per_turn_20": round(small, 1), "server_cpu_ms_per_turn_600": round(large, 1),
            "ratio_600_to_20": round(large / small, 2), "load": [start_load, load()]}


async def warm_every_server(server, headers, connections: int, rounds: int = 20) -> int:
    """Rounds of ten runs at once, each round on new connections, until every server process
    has executed one of them; the rounds it took. The servers share one listening socket and
    the idle one accepts: one server can take a whole round, and runs on kept connections stay
    with it, so rounds repeat until the runs' leases name every server."""
    since = await asyncio.to_thread(server.shell, "from django.utils import timezone; print(timezone.now().isoformat())")
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    for done in range(1, rounds + 1):
        async with httpx.AsyncClient(base_url=f"{server.url}/api", headers=headers, timeout=300, limits=limits) as fresh:
            results = await asyncio.gather(*(one_run(fresh) for _ in range(10)))
        errors = [r["error"] for r in results if "error" in r]
        if errors:
            raise RuntimeError(f"warm-up run failed: {errors[0]}")
        owners = await asyncio.to_thread(server.shell, (
            "from apps.runs.models import Run\n"
            f"print(' '.join(sorted(set(Run.objects.filter(created_at__gte={since.strip()!r}).values_list('lease_owner', flat=True)))))"))
        pids = {int(owner.rsplit(":", 1)[1]) for owner in owners.split() if ":" in owner}
        if set(server.server_pids) <= pids:
            return done
    raise RuntimeError(f"after {rounds} warm-up rounds some server took no run (servers {server.server_pids}, ran on {sorted(pids)})")


async def measure(args: argparse.Namespace) -> dict:
    model = ModelProcess(args.model_seconds)
    server = start_server(model.base_url, Path(tempfile.mkdtemp(prefix="deerflow-user-")), args.web_processes)
    out: dict = {"web_processes": len(server.server_pids), "model_seconds": args.model_seconds}
    try:
        token = server.create_user_token("bench")
        limits = httpx.Limits(max_connections=args.runs + 10, max_keepalive_connections=args.runs + 10)
        async with httpx.AsyncClient(base_url=f"{server.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=300,
                                     limits=limits) as client:
            # Every server's first run (its graph build, the model client's TLS context) and
            # first run that injects memory (its token counter) before anything is measured;
            # then the warm-up's memory updates, so they fall in no burst.
            out["warm_up_rounds"] = await warm_every_server(server, client.headers, args.runs)
            await asyncio.sleep(35)
            out["warm_up_rounds"] += await warm_every_server(server, client.headers, args.runs)
            await asyncio.sleep(35)
            if args.only in ("", "burst"):
                for arrivals, spread in (("at_once", 0.0), ("spread", args.spread_seconds)):
                    out[f"burst_{arrivals}"] = [await burst(client, server.server_pids, args.runs, spread, 30.0)
                                                for _ in range(args.repeats)]
            if args.only in ("", "long_thread"):
                out["long_thread"] = [await long_thread(client, server.server_pids, args.turns) for _ in range(args.repeats)]
    finally:
        server.stop()
        model.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="runs per burst")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-seconds", type=float, default=0.2, help="how long each chat answer takes")
    parser.add_argument("--spread-seconds", type=float, default=10.0, help="the spread burst's arrivals span this long")
    parser.add_argument("--turns", type=int, default=20, help="turns per thread in the long-thread measurement")
    parser.add_argument("--web-processes", default="auto", help="as WEB_PROCESSES takes it (make run: auto)")
    parser.add_argument("--only", choices=["", "burst", "long_thread"], default="")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args)), indent=2))


if __name__ == "__main__":
    main()
