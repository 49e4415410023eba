"""Every operation of /api/schema/, called on a live server with requests Schemathesis
generates from the schema, answers what the schema says: a documented status, the documented
content type, a body that validates against the documented schema, and never a 5xx.

Bounded by a number of examples per operation (not by time), so the run is the same size on a
fast machine and a slow one. Path ids are a real thread and run of the caller's half the time,
so the success responses are checked too and not only the 404s of ids nobody has.

And a Python client generated from the same schema (openapi-python-client, into a temp
directory each time) creates a thread, runs the agent and reads the run and the state back as
typed models, on the same server.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

from harness.testing import loopback_config_text
from tests.support.live import start_live_server

pytestmark = [pytest.mark.slow]

EXAMPLES_PER_OPERATION = 10


@schemathesis.check
def no_unhandled_error(ctx, response, case):
    """A 500 is an unhandled exception; 502 and 503 are documented domain errors (the model or
    another upstream is unavailable, which the loopback model may well be for a made-up body)."""
    if response.status_code >= 500 and response.status_code not in (502, 503):
        raise AssertionError(f"{response.status_code}: {response.text[:500]}")


CHECKS = [no_unhandled_error, status_code_conformance, content_type_conformance, response_schema_conformance]
ALL_SCOPES = "threads:read threads:write runs:read runs:create runs:cancel knowledge:read knowledge:write admin"

PACKAGE = "deerflow_api_client"
# No formatter run over the generated code (ruff is not needed to import it).
GENERATOR_CONFIG = "post_hooks: []\n"


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
    called = operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        method, path = operation.method.upper(), operation.path
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
            except (Exception, BaseExceptionGroup) as exc:  # collect them all: one run names every mismatch
                failures.setdefault(f"{method} {path}", str(exc)[:1500])

        call()
    assert operations > 100 and called >= operations * 2, (operations, called)
    # A 500's cause is in the server's log, which goes with the live server's home.
    tracebacks = live.log().split("Traceback (most recent call last)")[1:]
    assert not failures, (f"{len(failures)} operations answered outside their schema:\n\n"
                          + "\n\n".join(f"{k}: {v}" for k, v in failures.items())
                          + "".join(f"\n\nserver traceback:{t[:3000]}" for t in tracebacks[-3:]))


@pytest.fixture(scope="module")
def client_package(live, tmp_path_factory):
    where = tmp_path_factory.mktemp("generated")
    (where / "schema.json").write_bytes(requests.get(f"{live.url}/api/schema/?format=json", timeout=60).content)
    (where / "config.yaml").write_text(GENERATOR_CONFIG)
    generator = Path(sys.executable).with_name("openapi-python-client")
    done = subprocess.run([str(generator), "generate", "--path", "schema.json", "--config", "config.yaml", "--meta", "none",
                           "--output-path", PACKAGE], cwd=where, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_a_generated_client_makes_a_thread_a_run_and_reads_its_state(live, client_package, script):
    script("Hello from the generated client's run.")
    api = importlib.import_module(f"{PACKAGE}.api.threads")
    runs = importlib.import_module(f"{PACKAGE}.api.runs")
    state = importlib.import_module(f"{PACKAGE}.api.state")
    models = importlib.import_module(f"{PACKAGE}.models")
    token = live.create_user_token("generated-client")
    client = client_package.AuthenticatedClient(base_url=live.url, token=token, raise_on_unexpected_status=True)

    thread = importlib.import_module(f"{api.__name__}.threads_create").sync(
        client=client, body=models.ThreadCreateRequest.from_dict({"metadata": {"from": "generated client"}}))
    assert isinstance(thread, models.Thread) and thread.metadata["from"] == "generated client"

    run = importlib.import_module(f"{runs.__name__}.threads_runs_create").sync(
        thread.thread_id, client=client, body=models.RunCreate.from_dict(
            {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "Say hello"}]}}))
    assert isinstance(run, models.Run) and run.status.value in ("pending", "running")

    final = importlib.import_module(f"{runs.__name__}.threads_runs_join_retrieve").sync(thread.thread_id, str(run.run_id), client=client)
    assert isinstance(final, models.FinalValues)
    finished = importlib.import_module(f"{runs.__name__}.threads_runs_retrieve").sync(thread.thread_id, str(run.run_id), client=client)
    assert finished.status.value == "success"

    current = importlib.import_module(f"{state.__name__}.threads_state_retrieve").sync(thread.thread_id, client=client)
    assert isinstance(current, models.ThreadState)
    answers = [m.get("content") for m in current.values["messages"] if m.get("type") == "ai"]
    assert answers[-1] == "Hello from the generated client's run."

    missing = importlib.import_module(f"{api.__name__}.threads_retrieve").sync_detailed("no-such-thread", client=client_package.AuthenticatedClient(
        base_url=live.url, token=token))
    assert missing.status_code == 404 and isinstance(missing.parsed, models.Error) and missing.parsed.detail
