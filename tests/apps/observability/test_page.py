"""The Observability page: staff only; finds runs by request id; shows tracing and metrics
state without any key."""

import pytest

from apps.runs.models import Run
from apps.threads.services import thread_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client, django_user_model):
    staff = django_user_model.objects.create_user(username="ops", password="pw-ops-1234", is_staff=True)
    client.force_login(staff)
    return client


def test_only_staff_see_it(client, user):
    assert client.get("/observability/").status_code == 302  # to the login page
    client.force_login(user)
    assert client.get("/observability/").status_code == 403


def test_finds_the_runs_of_a_request(staff_client, user):
    thread = thread_create(owner=user, thread_id=None, assistant_id="lead_agent")
    Run.objects.create(thread=thread, owner=user, status=Run.Status.SUCCESS, request_id="req-wanted")
    other = Run.objects.create(thread=thread, owner=user, status=Run.Status.ERROR, request_id="req-other")
    page = staff_client.get("/observability/", {"request_id": "req-wanted"}).content.decode()
    assert "req-wanted" in page and "req-other" not in page
    page = staff_client.get("/observability/").content.decode()
    assert "req-wanted" in page and str(other.pk)[:8] in page
    missing = staff_client.get("/observability/", {"request_id": "nobody"}).content.decode()
    assert "No run was started by request nobody" in missing
    bad = staff_client.get("/observability/", {"request_id": "two words"})
    assert bad.status_code == 200 and "is not a request id" in bad.content.decode()


def test_shows_tracing_without_keys(staff_client, monkeypatch, tmp_path, settings):
    from harness.config.loader import reset_config_cache
    from tests.apps.observability.conftest import FIXTURE_CONFIG

    path = tmp_path / "config.yaml"
    path.write_text(FIXTURE_CONFIG.read_text() + "tracing:\n  langfuse:\n    host: http://127.0.0.1:9\n"
                    "    public_key: pk-lf-shown-not\n    secret_key: sk-lf-never-shown\n")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    monkeypatch.delenv("LANGSMITH_TRACING", raising=False)
    reset_config_cache()
    settings.METRICS_ENABLED, settings.METRICS_TOKEN = True, "tok-never-shown"
    try:
        page = staff_client.get("/observability/").content.decode()
    finally:
        reset_config_cache()
    assert "http://127.0.0.1:9" in page and "from config.yaml" in page
    assert "metrics token" in page
    for secret in ("sk-lf-never-shown", "pk-lf-shown-not", "tok-never-shown"):
        assert secret not in page
