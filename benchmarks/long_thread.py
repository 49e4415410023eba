"""One long thread: what a thread of N short turns costs in storage and time.

Starts one real Daphne server on `make run`'s stack (SQLite, runs in the process) whose lead
agent has an instant scripted model, then runs N turns on one thread through `/runs/wait`
and prints, at turns 10, 100, 200, … and N:

- the database growth since the thread was created (checkpoint file + the Django database:
  checkpoints and the run journal), in MB;
- the median time of the last 10 turns (request → the stream's `end`, streaming
  `messages-tuple` as a chat client does), and its ratio to turn 10's; the whole state is
  measured on its own, by `GET /threads/{id}/state` (what `/runs/wait` also returns at the end);
- `GET /threads/{id}/state` and `GET /threads/{id}/messages/page` times (median of 5).

    .venv/bin/python benchmarks/long_thread.py [--turns 300]

Issue 18's budgets: ≤ 10 MB after 300 turns, turn 300 ≤ 1.2× turn 10, state ≤ 30 ms at 500.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_support import INSTANT_CONFIG, instant_server_env  # noqa: E402
from tests.support.live import start_live_server  # noqa: E402



def db_bytes(home: Path) -> int:
    """Every SQLite file of the stack, WAL files included."""
    return sum(p.stat().st_size for p in home.glob("*.sqlite3*"))


def timed(fn, repeat: int = 5) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args(argv)
    if args.turns < 10:
        parser.error("--turns must be at least 10")

    home = Path(tempfile.mkdtemp(prefix="deerflow-long-thread-"))
    env = instant_server_env()
    server = start_live_server(home, config_text=INSTANT_CONFIG, extra_env=env)
    try:
        token = server.create_user_token("bench")
        client = httpx.Client(base_url=f"{server.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=60)
        thread = client.post("/threads", json={}).json()["thread_id"]
        base = db_bytes(home)
        marks = sorted({10, *range(100, args.turns + 1, 100), args.turns})
        turn_times: list[float] = []
        rows = []
        for turn in range(1, args.turns + 1):
            body = {"input": {"messages": [{"role": "user", "content": f"turn {turn}: a short question"}]},
                    "stream_mode": ["messages-tuple"]}
            start = time.perf_counter()
            ended = False
            with client.stream("POST", f"/threads/{thread}/runs/stream", json=body) as response:
                if response.status_code != 200:
                    raise SystemExit(f"turn {turn}: {response.status_code} {response.read()[:200]!r}")
                for line in response.iter_lines():
                    if line == "event: end":
                        ended = True
                    elif line == "event: error":
                        raise SystemExit(f"turn {turn}: the run failed")
            turn_times.append(time.perf_counter() - start)
            if not ended:
                raise SystemExit(f"turn {turn}: the stream closed without end")
            if turn in marks:
                recent = statistics.median(turn_times[-10:])
                state = timed(lambda: client.get(f"/threads/{thread}/state").raise_for_status())
                page = timed(lambda: client.get(f"/threads/{thread}/messages/page", params={"limit": 50}).raise_for_status())
                rows.append({"turn": turn, "db_mb": (db_bytes(home) - base) / 1e6, "turn_ms": recent * 1000,
                             "state_ms": state * 1000, "page_ms": page * 1000})
        first = rows[0]["turn_ms"]
        print(f"{'turn':>5} {'db growth':>10} {'turn (last 10)':>15} {'vs turn 10':>11} {'GET state':>10} {'messages page':>14}")
        for row in rows:
            print(f"{row['turn']:>5} {row['db_mb']:>8.1f} MB {row['turn_ms']:>12.1f} ms {row['turn_ms'] / first:>10.2f}x "
                  f"{row['state_ms']:>7.1f} ms {row['page_ms']:>11.1f} ms")
        return {"rows": rows}
    finally:
        server.stop()


if __name__ == "__main__":
    main()
