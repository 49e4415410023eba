"""The model probe through Django: ``manage.py probe_models`` and the admin action store each
model's result; /api/models and the picker show it; a model that failed tool calls cannot be
picked for a run until an admin allows it."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.governance.models import ModelProbe
from harness.config.loader import reset_config_cache
from harness.testing import LoopbackOpenAIServer, call, loopback_config_text, tool_reply

pytestmark = pytest.mark.django_db

GOOD = ["ready", "1, 2, 3", "again", tool_reply(call("probe_lookup", key="alpha")), "value-of-alpha",
        tool_reply(call("probe_lookup", key="alpha"), call("probe_lookup", key="beta")), "read"]
NO_TOOLS = ["ready", "1, 2, 3", "again", "I think it is 42.", "alpha 1, beta 2", "read"]


@pytest.fixture
def configured(tmp_path, monkeypatch):
    def write(server, extra=""):
        path = tmp_path / "config.yaml"
        path.write_text(loopback_config_text(server.base_url, extra_yaml=extra))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
        reset_config_cache()
        return path

    yield write
    reset_config_cache()


def test_the_command_stores_and_prints_each_step(configured):
    with LoopbackOpenAIServer(GOOD) as server:
        configured(server)
        out = StringIO()
        call_command("probe_models", stdout=out)
    row = ModelProbe.objects.get(model_name="loopback")
    assert row.status == "passed" and not row.blocks_agent and row.probed_at is not None
    assert [s["name"] for s in row.steps][:3] == ["completion", "usage", "streaming"]
    assert "loopback: passed" in out.getvalue() and "passed   tool_call" in out.getvalue()


def test_a_failed_tool_call_probe_blocks_picking_the_model_until_an_admin_allows_it(configured, user, user_client, admin_client, client):
    with LoopbackOpenAIServer(NO_TOOLS) as server:
        configured(server)
        out = StringIO()
        call_command("probe_models", "--model", "loopback", stdout=out)
        assert "failed   tool_call — the model answered without calling the tool" in out.getvalue()
        row = ModelProbe.objects.get(model_name="loopback")
        assert row.status == "failed" and row.blocks_agent and "tool_call" in row.failed_steps

        (model,) = user_client.get("/api/models").json()["models"]
        assert model["selectable"] is False and model["probe"]["blocked"] is True
        assert "tool_call" in model["probe"]["failed_steps"]
        client.force_login(user)
        page = client.get("/").content.decode()
        assert "(failed tool-call probe)" in page

        thread = user_client.post("/api/threads", {}, format="json").json()["thread_id"]
        body = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hi"}]}, "context": {"model_name": "loopback"}}
        refused = user_client.post(f"/api/threads/{thread}/runs", body, format="json")
        assert refused.status_code == 422
        assert "model 'loopback' failed the tool_call" in refused.json()["detail"] and "an admin can allow it" in refused.json()["detail"]

        # the admin override, as the admin form saves it
        response = admin_client.post(f"/admin/governance/modelprobe/{row.pk}/change/", {"allow_despite_failure": "on"})
        assert response.status_code == 302
        (model,) = user_client.get("/api/models").json()["models"]
        assert model["selectable"] is True and model["probe"]["allowed_by_admin"] is True


def test_the_admin_action_probes_again(configured, admin_client):
    with LoopbackOpenAIServer(NO_TOOLS + GOOD) as server:
        configured(server)
        call_command("probe_models", stdout=StringIO())
        row = ModelProbe.objects.get(model_name="loopback")
        assert row.blocks_agent
        response = admin_client.post("/admin/governance/modelprobe/", {"action": "probe_again", "_selected_action": [row.pk]}, follow=True)
        assert response.status_code == 200 and "loopback: passed" in response.content.decode()
    row.refresh_from_db()
    assert row.status == "passed" and not row.blocks_agent


def test_a_model_without_a_key_is_stored_as_not_configured(tmp_path, monkeypatch):
    monkeypatch.delenv("PROBE_NO_KEY", raising=False)
    path = tmp_path / "config.yaml"
    path.write_text(loopback_config_text("http://127.0.0.1:9/v1").replace("api_key: test-key", "api_key: $PROBE_NO_KEY"))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    reset_config_cache()
    try:
        out = StringIO()
        call_command("probe_models", stdout=out)
    finally:
        reset_config_cache()
    row = ModelProbe.objects.get(model_name="loopback")
    assert row.status == "not_configured" and "not configured" in row.steps[0]["detail"]
    assert "loopback: not_configured" in out.getvalue()


def test_unknown_models_are_a_command_error(configured):
    with LoopbackOpenAIServer([]) as server:
        configured(server)
        with pytest.raises(CommandError, match="unknown model"):
            call_command("probe_models", "--model", "ghost")


def test_the_admin_button_probes_every_configured_model_with_no_rows_yet(configured, admin_client):
    with LoopbackOpenAIServer(GOOD) as server:
        configured(server)
        listing = admin_client.get("/admin/governance/modelprobe/")
        assert listing.status_code == 200 and "Probe every configured model" in listing.content.decode()
        assert admin_client.get("/admin/governance/modelprobe/probe-all/").status_code == 405
        response = admin_client.post("/admin/governance/modelprobe/probe-all/", follow=True)
    assert response.status_code == 200 and "loopback: passed" in response.content.decode()
    assert ModelProbe.objects.get(model_name="loopback").status == "passed"
