"""Multi-process metrics: two real Daphne servers write to one PROMETHEUS_MULTIPROC_DIR, and
either one's /metrics sums both (as a Celery worker on the host would be summed too)."""

import json
import urllib.error
import urllib.request

import pytest

from harness.testing import loopback_config_text
from tests.apps.observability.metrics_support import samples, value
from tests.support.live import start_live_server

pytestmark = pytest.mark.slow

METRICS_TOKEN = "live-scrape-token"


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory, model_server):
    home = tmp_path_factory.mktemp("metrics-live")
    server = start_live_server(home, config_text=loopback_config_text(model_server.base_url, timeout=30), servers=2, extra_env={
        "METRICS_ENABLED": "true", "METRICS_TOKEN": METRICS_TOKEN, "METRICS_ALLOWED_IPS": "",
        "PROMETHEUS_MULTIPROC_DIR": str(home / "metrics"),
    })
    yield server
    server.stop()


def _request(url, *, token=None, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET", headers={
        **({"Authorization": f"Bearer {token}"} if token else {}), **({"Content-Type": "application/json"} if data else {}), **(headers or {})})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, response.headers, response.read()


def test_every_server_reports_the_sum_of_all_processes(two_servers, script):
    token = two_servers.create_user_token("metrics-user")
    script("first answer", "second answer")
    for url in two_servers.urls:  # one run executed by each server
        _, _, thread = _request(f"{url}/api/threads", token=token, body={})
        tid = json.loads(thread)["thread_id"]
        status, headers, _ = _request(f"{url}/api/threads/{tid}/runs/wait", token=token, headers={"X-Request-ID": "live-req"},
                                      body={"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hi"}]}})
        assert status == 200 and headers["X-Request-ID"] == "live-req"

    scrapes = []
    for url in two_servers.urls:
        status, headers, body = _request(f"{url}/metrics", token=METRICS_TOKEN)
        assert status == 200 and headers["Content-Type"].startswith("text/plain")
        scrapes.append(samples(body.decode()))
    for scrape in scrapes:
        assert value(scrape, "deerflow_runs_started_total") == 2
        assert value(scrape, "deerflow_runs_finished_total", status="success") == 2
        assert value(scrape, "deerflow_http_requests_total", route="api/threads/<str:thread_id>/runs/wait", method="POST", status="200") == 2
        assert value(scrape, "deerflow_model_tokens_total", model="loopback", kind="output") > 0
        assert value(scrape, "deerflow_runs_active") == 0
        assert value(scrape, "deerflow_runs_queued") == 0

    # METRICS_ALLOWED_IPS is empty: even loopback needs the token.
    with pytest.raises(urllib.error.HTTPError) as refused:
        _request(f"{two_servers.url}/metrics")
    assert refused.value.code == 401
