"""Run latency through the whole server: request -> first `messages` event and -> `end`,
then a burst of concurrent streamed runs.

Starts a real Daphne server (embedded stack: SQLite, in-process runs) whose lead agent has
an instant scripted model, so what is measured is the platform, not a provider.

    .venv/bin/python benchmarks/run_latency.py [--runs 30] [--burst 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.live import start_live_server  # noqa: E402

CONFIG = """\
config_version: 1
models:
  - name: instant
    use: langchain_openai:ChatOpenAI
    model: unused
    api_key: unused
sandbox:
  use: local
"""

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


async def main(runs: int, burst: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix="deerflow-bench-"))
    # Production settings (DJANGO_DEBUG off): debug mode logs every SQL query.
    env = {"DEERFLOW_AGENT_FACTORY": "benchmarks.bench_support:make_instant_lead_agent", "PYTHONPATH": str(ROOT),
           "DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": "benchmark-only-" + "x" * 40, "ALLOWED_HOSTS": "127.0.0.1,localhost"}
    server = start_live_server(home, config_text=CONFIG, extra_env=env)
    try:
        token = server.create_user_token("bench")
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=f"{server.url}/api", headers=headers, timeout=120) as client:
            for _ in range(3):  # warm-up: imports, first graph build, SQLite caches
                await one_run(client)
            sequential = [await one_run(client) for _ in range(runs)]
            errors = [r for r in sequential if "error" in r]
            good = [r for r in sequential if "error" not in r]
            started = time.perf_counter()
            results = await asyncio.gather(*(one_run(client) for _ in range(burst)))
            wall = time.perf_counter() - started
        burst_good = [r for r in results if "error" not in r]
        report = {
            "sequential_runs": runs,
            "sequential_errors": len(errors),
            "end_ms_median": round(statistics.median(r["end"] for r in good) * 1000, 1),
            "first_message_ms_median": round(statistics.median(r["first_message"] for r in good) * 1000, 1),
            "first_event_ms_median": round(statistics.median(r["first_event"] for r in good) * 1000, 1),
            "burst_runs": burst,
            "burst_errors": burst - len(burst_good),
            "burst_runs_per_s": round(len(burst_good) / wall, 1),
            "burst_first_event_ms_p50": round(pct([r["first_event"] for r in burst_good], 50) * 1000, 1) if burst_good else None,
            "burst_first_event_ms_p99": round(pct([r["first_event"] for r in burst_good], 99) * 1000, 1) if burst_good else None,
        }
        return report
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--burst", type=int, default=50)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.runs, args.burst)), indent=2))
