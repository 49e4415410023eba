"""The request id reaches a real Celery worker process: its log lines for the run (JSON there)
carry the run id and the id of the request that admitted it."""

import json
import time

import pytest

from apps.runs.models import Run
from tests.apps.runs.test_runs_api import new_thread
from tests.apps.schedules.test_scheduling_worker import _worker
from tests.support.waiting import HANG_SECONDS, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _finished(run_id: str, log, timeout: float = HANG_SECONDS) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if not run.is_active:
            return run
        time.sleep(0.1)
    raise AssertionError(f"the run did not finish; worker log:\n{log.read_text(errors='replace')}")


def _records_once_finished(log, run_id) -> list[dict] | None:
    records = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue  # the worker's banner
    done = any(r.get("run_id") == str(run_id) and r.get("msg") == "Run finished" for r in records)
    return records if done else None


def test_a_celery_workers_log_lines_carry_the_run_and_request_ids(user_client, settings, tmp_path):
    settings.RUN_EXECUTOR = "celery"  # this process admits; the worker executes
    with _worker(tmp_path, LOG_FORMAT="json") as (process, log):
        tid = new_thread(user_client)
        response = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "hi"}]}},
                                    format="json", HTTP_X_REQUEST_ID="req-celery-1")
        assert response.status_code == 200, response.content
        assert response["X-Request-ID"] == "req-celery-1"
        run = _finished(response.json()["run_id"], log)
        assert run.status == "success" and run.request_id == "req-celery-1"
        assert run.lease_owner.endswith(f":{process.pid}")  # executed over there
        # The worker settles the run before it logs "Run finished": wait for the line.
        records = wait_until(lambda: _records_once_finished(log, run.pk), "the worker's \"Run finished\" line")
    ours = [r for r in records if r.get("run_id") == str(run.pk)]
    messages = {r["msg"] for r in ours}
    assert {f"Executing run {run.pk}", "Run finished"} <= messages, records
    assert all(r["request_id"] == "req-celery-1" for r in ours)
    # The worker's other lines (its start, other tasks) name no run.
    assert any("ready" in r.get("msg", "") and "run_id" not in r for r in records)
