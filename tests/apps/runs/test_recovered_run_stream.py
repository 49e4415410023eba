"""What a client sees of a run its server died under, once another start of the server has
settled it: the run's finish time, and a stream that says why the run failed before it ends.

A live Daphne server in a subprocess, killed (SIGKILL) mid-run and started again; a short lease
(``RUN_LEASE_SECONDS``) so recovery comes quickly.
"""

from __future__ import annotations

import httpx
import pytest

from apps.runs.recovery import ORPHAN_ERROR
from harness.testing import LoopbackOpenAIServer, loopback_config_text
from tests.apps.runs.test_crash_restart import _client, _run_status, _start_slow_run
from tests.support.waiting import wait_until
from tests.apps.runs.test_runs_api import parse_sse
from tests.support.live import start_live_server

pytestmark = [pytest.mark.slow]


@pytest.fixture
def model():
    with LoopbackOpenAIServer() as server:
        yield server


def _join_stream(url: str, token: str, tid: str, run_id: str) -> list[dict]:
    with _client(url, token) as api:
        response = api.get(f"/threads/{tid}/runs/{run_id}/stream", headers={"Accept": "text/event-stream"})
        assert response.status_code == 200, response.text
        return parse_sse(response.content)


def test_a_run_settled_after_a_crash_has_its_finish_time_and_streams_its_error_then_end(tmp_path, model):
    server = start_live_server(tmp_path / "home", config_text=loopback_config_text(model.base_url, timeout=300),
                               extra_env={"RUN_LEASE_SECONDS": "5"})
    try:
        token = server.create_user_token("crash-user")
        tid, run_id, _ = _start_slow_run(server, token, model)
        server.crash()
        server.restart()

        settled = wait_until(lambda: (r := _run_status(server.url, token, tid, run_id))["status"] != "running" and r,
                             "the dead process's run to be settled")
        assert settled["status"] == "error" and settled["stop_reason"] == "orphan_recovered"
        assert settled["finished_at"] and settled["finished_at"] >= settled["created_at"]

        events = _join_stream(server.url, token, tid, run_id)
        assert [e["event"] for e in events] == ["error", "end"]
        assert events[0]["data"] == {"error": "orphan_recovered", "message": ORPHAN_ERROR, "name": "orphan_recovered"}
        with _client(server.url, token) as api:  # /join answers with the values and the same failure
            joined = api.get(f"/threads/{tid}/runs/{run_id}/join").json()
        assert joined["__error__"]["message"] == ORPHAN_ERROR
    finally:
        server.stop()
