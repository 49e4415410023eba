"""A compaction and a run sent at the same moment to one thread, over real HTTP to a Daphne
server, fifty times: the two never both succeed. Whichever takes the thread's active slot
first wins and the other is told 409 with a ``detail`` (apps/runs/reservations.py), on
SQLite and, in the second tier, on PostgreSQL.

Every model call (the run's answer, the compaction's summary) waits at a gate the test opens
only once the loser has its 409, so the winner is still holding the thread when the loser
arrives, however the two requests are scheduled."""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import httpx
import pytest

from harness.testing import loopback_config_text
from tests.support.live import start_live_server

pytestmark = [pytest.mark.slow, pytest.mark.db_tier]

PAIRS = 50
# How long any one step may take before the test calls it stuck: a bound, not a measure.
STEP_SECONDS = 120
CONFIG_YAML = "sandbox:\n  use: local\nsummarization:\n  enabled: false\n  keep:\n    type: messages\n    value: 1\n"


class ModelGate:
    """The loopback model's replies, each held until the gate opens."""

    def __init__(self) -> None:
        self.open = threading.Event()

    def reply(self, messages) -> str:
        if not self.open.wait(STEP_SECONDS):
            return "the gate stayed shut"
        return "noted: the user keeps asking things"


@pytest.fixture(scope="module")
def live(tmp_path_factory, model_server):
    server = start_live_server(tmp_path_factory.mktemp("reserve-live"),
                               config_text=loopback_config_text(model_server.base_url, timeout=STEP_SECONDS, extra_yaml=CONFIG_YAML))
    yield server
    server.stop()


@pytest.fixture
def client(live):
    token = live.create_user_token("racer")
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {token}"}, timeout=STEP_SECONDS) as c:
        yield c


def run_body(text: str) -> dict:
    return {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": text}]}}


def settled(client: httpx.Client, tid: str, run_id: str) -> str:
    """The run's final status once its row has left the active statuses (its stream ends a
    moment before that, so joining it is not enough to know the thread is free)."""
    deadline = time.monotonic() + STEP_SECONDS
    while time.monotonic() < deadline:
        status = client.get(f"/api/threads/{tid}/runs/{run_id}").json()["status"]
        if status not in ("pending", "running"):
            return status
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish")


def test_compact_and_run_at_the_same_moment_never_both_succeed(live, client, model_server):
    gate = ModelGate()
    gate.open.set()
    model_server.reset(*[gate.reply] * (4 * PAIRS + 8))
    tid = client.post("/api/threads", json={}).json()["thread_id"]
    token = client.headers["Authorization"]
    wins = {"compact": 0, "run": 0}
    history_runs = 0
    needs_history = True
    with ThreadPoolExecutor(2) as pool, \
            httpx.Client(base_url=live.url, headers={"Authorization": token}, timeout=STEP_SECONDS) as compact_client, \
            httpx.Client(base_url=live.url, headers={"Authorization": token}, timeout=STEP_SECONDS) as run_client:
        for pair in range(PAIRS):
            if needs_history:
                # Compaction leaves the kept window only: give it something to summarize again.
                started = client.post(f"/api/threads/{tid}/runs", json=run_body(f"history {pair}"))
                assert started.status_code == 200, started.text
                assert settled(client, tid, started.json()["run_id"]) == "success"
                history_runs += 1
            gate.open.clear()
            start = threading.Barrier(2)

            def send(name: str) -> httpx.Response:
                start.wait()
                if name == "compact":
                    return compact_client.post(f"/api/threads/{tid}/compact", json={})
                return run_client.post(f"/api/threads/{tid}/runs", json=run_body(f"question {pair}"))

            futures = {pool.submit(send, "compact"): "compact", pool.submit(send, "run"): "run"}
            # The loser is answered while the winner waits at the gate; the winner is
            # answered first only when it is the run (admission answers before the model).
            pending = set(futures)
            refused = None
            while refused is None:
                done, pending = wait(pending, timeout=STEP_SECONDS, return_when=FIRST_COMPLETED)
                assert done, f"pair {pair}: neither request was refused while the other held the thread"
                for future in done:
                    if future.result().status_code == 409:
                        refused = futures[future]
                    else:
                        assert futures[future] == "run" and future.result().status_code == 200, future.result().text
            gate.open.set()
            responses = {name: future.result(timeout=STEP_SECONDS) for future, name in futures.items()}
            winner = "run" if refused == "compact" else "compact"
            assert responses[winner].status_code == 200, f"pair {pair}: {winner} failed too: {responses[winner].text}"
            detail = responses[refused].json()["detail"]
            assert f"Thread {tid}" in detail and ("active run" in detail or "is busy" in detail), detail
            if winner == "run":
                assert settled(client, tid, responses["run"].json()["run_id"]) == "success"
            wins[winner] += 1
            needs_history = winner == "compact"
    print(f"{PAIRS} pairs: the compaction won {wins['compact']}, the run {wins['run']}")
    assert sum(wins.values()) == PAIRS
    # No reservation outlived its request, none was listed as a run: every run on the
    # thread is a turn that was asked, and all of them finished.
    runs = client.get(f"/api/threads/{tid}/runs", params={"limit": 200}).json()
    assert len(runs) == wins["run"] + history_runs and {r["status"] for r in runs} == {"success"}
    listed = live.shell("from apps.runs.models import ThreadReservation; print(ThreadReservation.objects.count())")
    assert listed == "0"
