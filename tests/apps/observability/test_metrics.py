"""/metrics: off by default, guarded by a token or an allow-list, and its counters move with
a run (runs, durations, first event, tools, tokens, subscribers, HTTP routes)."""

import pytest

from apps.observability.middleware import MetricsMiddleware
from harness.observability import metrics
from harness.testing import call, tool_reply
from tests.apps.observability.metrics_support import samples, value
from tests.apps.runs.test_runs_api import body_of, new_thread

MIDDLEWARE_PATH = f"{MetricsMiddleware.__module__}.{MetricsMiddleware.__name__}"


@pytest.fixture
def metrics_on(settings):
    """What METRICS_ENABLED=true does at startup: the metrics exist, the middleware is in."""
    metrics.configure(enabled=True)
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_IPS = ["127.0.0.1/32", "::1/128"]
    middleware = list(settings.MIDDLEWARE)
    middleware.insert(middleware.index("deerflow_site.request_id.RequestIdMiddleware") + 1, MIDDLEWARE_PATH)
    settings.MIDDLEWARE = middleware
    return settings


def scrape(client, **extra) -> dict:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return samples(response.content.decode())


@pytest.mark.django_db
def test_metrics_are_off_by_default(client, settings):
    assert settings.METRICS_ENABLED is False
    response = client.get("/metrics")
    assert response.status_code == 404


@pytest.mark.django_db
def test_access_needs_an_allowed_address_or_the_token(client, metrics_on):
    assert client.get("/metrics").status_code == 200  # loopback, allowed by default
    refused = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 403 and "METRICS_ALLOWED_IPS" in refused.json()["detail"]

    metrics_on.METRICS_TOKEN = "scrape-secret-1"
    anonymous = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert anonymous.status_code == 401 and "metrics token" in anonymous.json()["detail"]
    wrong = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"].startswith("Bearer")
    # A personal access token is not the metrics token, and is not looked up either.
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer dfp_abc").status_code == 401
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer scrape-secret-1").status_code == 200

    metrics_on.METRICS_TOKEN = ""
    metrics_on.METRICS_ALLOWED_IPS = ["203.0.113.0/24"]
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 200
    assert client.get("/metrics").status_code == 403  # loopback is no longer on the list
    posted = client.post("/metrics", REMOTE_ADDR="203.0.113.9")
    assert posted.status_code == 405 and "GET" in posted.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_counters_move_with_a_run(user_client, client, scripted_agent, metrics_on):
    scripted_agent(tool_reply(call("progress", note="half way")), "All done.")
    tid = new_thread(user_client)
    before = scrape(client)
    response = user_client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": "go"}]}}, format="json")
    assert response.status_code == 200
    body_of(response)
    after = scrape(client)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("deerflow_runs_started_total") == 1
    assert delta("deerflow_runs_finished_total", status="success") == 1
    assert delta("deerflow_run_duration_seconds_count", status="success") == 1
    assert delta("deerflow_run_first_event_seconds_count") == 1
    assert delta("deerflow_tool_calls_total", tool="progress", status="success") == 1
    assert delta("deerflow_model_tokens_total", model="scripted-model", kind="input") > 0
    assert delta("deerflow_model_tokens_total", model="scripted-model", kind="output") > 0
    assert value(after, "deerflow_runs_active") == value(before, "deerflow_runs_active")
    assert value(after, "deerflow_stream_subscribers", transport="wait") == 0
    assert value(after, "deerflow_runs_queued") == 0
    route = "api/threads/<str:thread_id>/runs/wait"
    assert delta("deerflow_http_requests_total", route=route, method="POST", status="200") == 1
    assert delta("deerflow_http_request_seconds_count", route=route, method="POST") == 1
    # Paths never become labels: the thread id appears nowhere in the scrape.
    assert not [key for key in after if tid in str(key)]


@pytest.mark.django_db
def test_a_pending_run_shows_as_queued(user, client, metrics_on):
    from apps.runs.models import Run
    from apps.threads.services import thread_create

    thread = thread_create(owner=user, thread_id=None, assistant_id="lead_agent")
    Run.objects.create(thread=thread, owner=user, status=Run.Status.PENDING)
    assert value(scrape(client), "deerflow_runs_queued") == 1


def test_sandbox_commands_are_timed_by_outcome(tmp_path):
    from prometheus_client import REGISTRY

    from harness.sandbox.process import run_command

    metrics.configure(enabled=True)

    def count(outcome):
        return REGISTRY.get_sample_value("deerflow_sandbox_command_seconds_count", {"outcome": outcome}) or 0

    ok, error = count("ok"), count("error")
    run_command(["true"], cwd=str(tmp_path), env={}, timeout=10, max_chars=100)
    run_command(["false"], cwd=str(tmp_path), env={}, timeout=10, max_chars=100)
    assert (count("ok") - ok, count("error") - error) == (1, 1)
