"""Every operation of /api/schema/, called on a live server with requests Schemathesis
generates from the schema, answers what the schema says: a documented status, the documented
content type, a body that validates against the documented schema, and never a 5xx.

Bounded by a number of examples per operation (not by time), so the run is the same size on a
fast machine and a slow one. Path ids are a real thread and run of the caller's half the time,
so the success responses are checked too and not only the 404s of ids nobody has.
"""

from __future__ import annotations

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

from harness.testing import loopback_config_text
from tests.support.live import start_live_server

pytestmark = [pytest.mark.slow]

EXAMPLES_PER_OPERATION = 4
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
ALL_SCOPES = "threads:read threads:write runs:read runs:create runs:cancel admin"

# Operations left out, and why: each would end the session the rest of the run stands on.
SKIPPED = {
    ("POST", "/api/v1/auth/logout"), ("POST", "/api/v1/auth/change-password"),
}


@pytest.fixture(scope="module")
def live(tmp_path_factory, model_server):
    server = start_live_server(tmp_path_factory.mktemp("conformance"), config_text=loopback_config_text(model_server.base_url))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def caller(live):
    # Staff with every scope: the staff routes answer their own bodies, not only 403s.
    live.shell("from apps.accounts.models import User\nUser.objects.create(username='conformance', is_staff=True)")
    token = live.create_user_token("conformance", scopes=ALL_SCOPES)
    headers = {"Authorization": f"Bearer {token}"}
    session = requests.Session()
    thread = session.post(f"{live.url}/api/threads", json={}, headers=headers).json()
    run = session.post(f"{live.url}/api/threads/{thread['thread_id']}/runs/wait", headers=headers,
                       json={"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "Hi"}]}})
    assert run.status_code == 200, run.text
    runs = session.get(f"{live.url}/api/threads/{thread['thread_id']}/runs", headers=headers).json()
    ids = {"thread_id": thread["thread_id"], "run_id": runs[0]["run_id"]}
    return headers, ids


def test_every_response_matches_the_schema(live, caller):
    headers, ids = caller
    schema = schemathesis.openapi.from_url(f"{live.url}/api/schema/?format=json", headers=headers)
    failures: dict[str, str] = {}
    called = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        method, path = operation.method.upper(), operation.path
        if (method, path) in SKIPPED:
            continue
        names = {parameter.name for parameter in operation.path_parameters}
        # A DELETE of the shared thread or run would leave the other operations nothing real to read.
        real = {k: v for k, v in ids.items() if k in names} if method != "DELETE" else {}
        strategies = [operation.as_strategy()]
        if real:
            strategies.append(operation.as_strategy(path_parameters=real))

        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, derandomize=True,
                  phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=st.one_of(*strategies))
        def call(case):
            nonlocal called
            called += 1
            try:
                case.call_and_validate(base_url=live.url, headers=headers, checks=CHECKS, timeout=60)
            except Exception as exc:  # collect them all: one run names every mismatch
                failures.setdefault(f"{method} {path}", str(exc)[:1500])

        call()
    assert called > len(failures)
    assert not failures, f"{len(failures)} operations answered outside their schema:\n\n" + "\n\n".join(f"{k}: {v}" for k, v in failures.items())
