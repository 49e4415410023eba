"""A process that dies mid-run (SIGKILL: no shutdown code runs) must not cost the user their
thread or their words: once the run's lease lapses the thread takes runs again with no other
traffic to trigger it, and the prompt the user sent is in the thread's history.

Live Daphne servers in subprocesses, a loopback model that answers slowly, and a short lease
(``RUN_LEASE_SECONDS``) so the lapse comes quickly.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from harness.testing import LoopbackOpenAIServer, Reply, loopback_config_text
from tests.support.live import start_live_server
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow]

LEASE = "5"
PROMPT = "Please remember this sentence: the heron flies at dawn."


@pytest.fixture
def model():
    with LoopbackOpenAIServer() as server:
        yield server


def _client(url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=f"{url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=30)




def _start_slow_run(server, token: str, model) -> tuple[str, str, float]:
    """A run whose model call hangs; returns (thread id, run id, admission time) once the
    model has the request."""
    model.reset(Reply(text="too late", delay=120), "A fresh answer.")
    with _client(server.url, token) as api:
        tid = api.post("/threads", json={}).json()["thread_id"]
        admitted = time.monotonic()
        response = api.post(f"/threads/{tid}/runs", json={"input": {"messages": [{"role": "user", "content": PROMPT}]}})
        assert response.status_code == 200, response.text
    wait_until(lambda: model.requests, "the model to be asked")
    return tid, response.json()["run_id"], admitted


def _run_status(url: str, token: str, tid: str, run_id: str) -> dict:
    # A read: it neither starts a run nor touches the runs loop.
    with _client(url, token) as api:
        return api.get(f"/threads/{tid}/runs/{run_id}").json()


def _prompt_in_history(url: str, token: str, tid: str) -> list[dict]:
    with _client(url, token) as api:
        page = api.get(f"/threads/{tid}/messages/page").json()["data"]
    return [e for e in page if e["event_type"] == "llm.human.input" and e["content"].get("content") == PROMPT]


def test_after_a_crash_the_thread_takes_runs_again_without_other_traffic(tmp_path, model):
    server = start_live_server(tmp_path / "home", config_text=loopback_config_text(model.base_url, timeout=300),
                               extra_env={"RUN_LEASE_SECONDS": LEASE})
    try:
        token = server.create_user_token("crash-user")
        tid, run_id, _ = _start_slow_run(server, token, model)
        server.crash()
        server.restart()

        # Only reads from here until the run is settled: nothing else may be needed.
        settled = wait_until(lambda: (r := _run_status(server.url, token, tid, run_id))["status"] != "running" and r,
                            "the dead process's run to be settled")
        assert settled["status"] == "error" and settled["stop_reason"] == "orphan_recovered"
        with _client(server.url, token) as api:
            again = api.post(f"/threads/{tid}/runs/wait", json={"input": {"messages": [{"role": "user", "content": "again"}]}})
        assert again.status_code == 200, again.text
        assert again.json()["messages"][-1]["content"] == "A fresh answer."
    finally:
        server.stop()


def test_a_crash_one_second_into_a_run_keeps_the_users_prompt_in_the_history(tmp_path, model):
    server = start_live_server(tmp_path / "home", config_text=loopback_config_text(model.base_url, timeout=300),
                               extra_env={"RUN_LEASE_SECONDS": LEASE})
    try:
        token = server.create_user_token("crash-user")
        tid, run_id, admitted = _start_slow_run(server, token, model)
        time.sleep(max(0.0, admitted + 1.0 - time.monotonic()))
        server.crash()
        server.restart()

        wait_until(lambda: _run_status(server.url, token, tid, run_id)["status"] == "error", "the dead process's run to be settled")
        assert len(_prompt_in_history(server.url, token, tid)) == 1
        # The next run neither loses nor repeats it.
        with _client(server.url, token) as api:
            assert api.post(f"/threads/{tid}/runs/wait", json={"input": {"messages": [{"role": "user", "content": "again"}]}}).status_code == 200
        assert len(_prompt_in_history(server.url, token, tid)) == 1
    finally:
        server.stop()


@pytest.mark.redis
def test_a_dead_celery_worker_frees_the_thread_and_keeps_the_prompt(tmp_path, model, own_redis_url):
    redis_url = own_redis_url
    env = {"RUN_LEASE_SECONDS": LEASE, "RUN_EXECUTOR": "celery", "REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url}
    server = start_live_server(tmp_path / "home", config_text=loopback_config_text(model.base_url, timeout=300),
                               extra_env=env, celery_workers=1)
    try:
        token = server.create_user_token("crash-user")
        tid, run_id, _ = _start_slow_run(server, token, model)
        worker = server.others[0]
        worker.kill()  # the run's process; the server that admitted it lives on
        worker.wait(10)

        settled = wait_until(lambda: (r := _run_status(server.url, token, tid, run_id))["status"] != "running" and r,
                            "the dead worker's run to be settled")
        assert settled["status"] == "error" and settled["stop_reason"] == "orphan_recovered"
        assert len(_prompt_in_history(server.url, token, tid)) == 1
        with _client(server.url, token) as api:
            # Admitted (no worker is left to execute it): the thread is free.
            assert api.post(f"/threads/{tid}/runs", json={"input": {"messages": [{"role": "user", "content": "again"}]}}).status_code == 200
    finally:
        server.stop()


@pytest.mark.redis
def test_when_a_server_dies_another_settles_its_run_and_ends_the_stream_it_serves(tmp_path, model, own_redis_url):
    # Two servers executing the runs they admit, streams through Redis: a client following
    # server A's run through server B is told the run ended, once the lease lapses.
    redis_url = own_redis_url
    env = {"RUN_LEASE_SECONDS": LEASE, "REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url}
    server = start_live_server(tmp_path / "home", config_text=loopback_config_text(model.base_url, timeout=300),
                               extra_env=env, servers=2)
    try:
        token = server.create_user_token("crash-user")
        tid, run_id, _ = _start_slow_run(server, token, model)  # admitted, so executed, by server A
        lines: list[str] = []

        def follow() -> None:
            with _client(server.urls[1], token) as api:
                with api.stream("GET", f"/threads/{tid}/runs/{run_id}/stream?cancel_on_disconnect=false") as response:
                    for line in response.iter_lines():
                        lines.append(line)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        wait_until(lambda: any(line.startswith("event: metadata") for line in lines), "server B to serve the stream")
        server.crash()  # server A

        wait_until(lambda: "event: end" in lines, "the stream to end")
        follower.join(30)
        status = _run_status(server.urls[1], token, tid, run_id)
        assert status["status"] == "error" and status["stop_reason"] == "orphan_recovered"
        assert len(_prompt_in_history(server.urls[1], token, tid)) == 1
    finally:
        server.stop()
