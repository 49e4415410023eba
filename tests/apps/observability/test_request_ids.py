"""A request's id: taken from X-Request-ID / traceparent or made up, returned, stored on the
run, and on every log line the run writes (key=value and JSON)."""

import io
import json
import logging
import re

import pytest

from apps.runs.models import Run
from deerflow_site.log_format import JsonFormatter, KeyValueFormatter
from harness.observability.context import request_id_from_headers
from harness.testing import Reply
from tests.apps.runs.test_runs_api import body_of, new_thread

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@pytest.mark.parametrize(("x_request_id", "traceparent", "expected"), [
    ("req-123", None, "req-123"),
    ("req-123", TRACEPARENT, "req-123"),
    (None, TRACEPARENT, TRACE_ID),
    (None, f"00-{'0' * 32}-00f067aa0ba902b7-01", None),  # an invalid trace id
    ("has space", None, None),
    ("x" * 129, None, None),
    ('quote"d', "garbage", None),
])
def test_request_id_from_headers(x_request_id, traceparent, expected):
    got = request_id_from_headers(x_request_id, traceparent)
    if expected is None:
        assert re.fullmatch(r"[0-9a-f]{32}", got)
    else:
        assert got == expected


@pytest.mark.django_db
def test_every_response_carries_the_request_id(user_client, client):
    given = user_client.get("/api/threads/nope", HTTP_X_REQUEST_ID="abc-42")
    assert given.status_code == 404 and given["X-Request-ID"] == "abc-42"
    from_trace = client.get("/accounts/login/", HTTP_TRACEPARENT=TRACEPARENT)
    assert from_trace["X-Request-ID"] == TRACE_ID
    made_up = client.get("/api/health")
    assert re.fullmatch(r"[0-9a-f]{32}", made_up["X-Request-ID"])
    assert client.get("/api/health")["X-Request-ID"] != made_up["X-Request-ID"]


@pytest.fixture
def run_log():
    """The root logger's lines in both formats, as the console handler would write them."""
    text, as_json = io.StringIO(), io.StringIO()
    handlers = [logging.StreamHandler(text), logging.StreamHandler(as_json)]
    handlers[0].setFormatter(KeyValueFormatter())
    handlers[1].setFormatter(JsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    for handler in handlers:
        root.addHandler(handler)
    yield text, as_json
    for handler in handlers:
        root.removeHandler(handler)
    root.setLevel(level)


@pytest.mark.django_db(transaction=True)
def test_the_run_stores_the_request_id_and_its_log_lines_carry_both_ids(user_client, scripted_agent, run_log):
    scripted_agent("Hello!")
    tid = new_thread(user_client)
    response = user_client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": "hi"}]}},
                                format="json", HTTP_X_REQUEST_ID="req-run-7")
    body_of(response)
    assert response["X-Request-ID"] == "req-run-7"
    run = Run.objects.get(thread_id=tid)
    assert run.status == "success" and run.request_id == "req-run-7"

    text, as_json = run_log
    finished = [line for line in text.getvalue().splitlines() if 'msg="Run finished"' in line]
    assert len(finished) == 1
    assert f'run_id="{run.pk}"' in finished[0] and 'request_id="req-run-7"' in finished[0] and f'thread_id="{tid}"' in finished[0]
    [record] = [json.loads(line) for line in as_json.getvalue().splitlines() if '"Run finished"' in line]
    assert record["run_id"] == str(run.pk) and record["request_id"] == "req-run-7" and record["status"] == "success"


@pytest.mark.django_db(transaction=True)
def test_a_failing_runs_warning_carries_the_ids_and_a_run_without_a_request_gets_its_own_id(user, scripted_agent, run_log):
    from apps.runs.runtime import get_runtime
    from apps.runs.schemas import RunCreate
    from apps.runs.services import start_run

    scripted_agent(Reply(status=400, error_message="model exploded"))
    admitted = start_run(user=user, thread_id=None, request=RunCreate(assistant_id="lead_agent", input={"messages": [{"role": "user", "content": "hi"}]}),
                         stateless=True)
    run_id = str(admitted.run.pk)
    get_runtime().call(get_runtime().wait_done, run_id, 30, timeout=35)
    run = Run.objects.get(pk=run_id)
    assert run.status == "error"
    assert re.fullmatch(r"[0-9a-f]{32}", run.request_id)  # admitted outside any request
    failed = [line for line in run_log[0].getvalue().splitlines() if "model exploded" in line and "level=WARNING" in line]
    assert failed and all(f'run_id="{run_id}"' in line and f'request_id="{run.request_id}"' in line for line in failed)


def test_lines_outside_a_run_carry_no_run_id(run_log):
    logging.getLogger("tests.observability").info("plain line")
    line = run_log[0].getvalue().splitlines()[-1]
    assert 'msg="plain line"' in line and "run_id=" not in line and "request_id=" not in line
