"""A Python client generated from /api/schema/ (openapi-python-client) works against a live
server: it creates a thread, runs the agent, and reads the run and the thread's state back as
typed models. Generated into a temp directory each time, from the server's own schema, so the
test fails as soon as the schema and the server disagree in a way a client would notice."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from harness.testing import loopback_config_text
from tests.support.live import start_live_server

pytestmark = [pytest.mark.slow]

PACKAGE = "deerflow_api_client"
# No formatter run over the output (ruff is not needed to import it).
GENERATOR_CONFIG = "post_hooks: []\n"


@pytest.fixture(scope="module")
def live(tmp_path_factory, model_server):
    server = start_live_server(tmp_path_factory.mktemp("client"), config_text=loopback_config_text(model_server.base_url))
    yield server
    server.stop()


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
