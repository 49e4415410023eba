"""Follow-up suggestions: one short call to the (loopback) model after an answer, parsed
into at most three chips; off by config; bad input named."""

import os
from pathlib import Path

import pytest
import yaml

from tests.apps.runs.test_runs_api import new_thread
from tests.apps.threads.test_thread_actions import ask

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def suggestions_on(tmp_path, monkeypatch, model_server, scripted_agent):
    def apply(enabled=True):
        base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
        base["models"][0]["base_url"] = model_server.base_url
        base["suggestions"] = {"enabled": enabled, "max_suggestions": 3}
        path = tmp_path / "config-suggestions.yaml"
        path.write_text(yaml.safe_dump(base))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))

    return apply


def test_suggestions_from_one_model_call(user_client, suggestions_on, scripted_agent, script, model_server):
    suggestions_on()
    scripted_agent("Llamas live in the Andes.")
    tid = new_thread(user_client)
    ask(user_client, tid, "Where do llamas live?")
    assert user_client.get("/api/suggestions/config").json() == {"enabled": True, "max_suggestions": 3}
    script('<think>the user likes llamas</think>```json\n["What do llamas eat?", "How tall are llamas?", '
           '"Are llamas friendly?", "One too many?"]\n```')
    response = user_client.post(f"/api/threads/{tid}/suggestions", {}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["suggestions"] == ["What do llamas eat?", "How tall are llamas?", "Are llamas friendly?"]
    asked = model_server.requests[-1]
    shown = str(asked.messages if hasattr(asked, "messages") else asked)
    assert "Where do llamas live?" in shown and "Llamas live in the Andes." in shown

    script('["Just one?", "Two?"]')
    one = user_client.post(f"/api/threads/{tid}/suggestions", {"n": 1, "messages": [{"role": "user", "content": "hi"}]}, format="json")
    assert one.json()["suggestions"] == ["Just one?"]


def test_suggestions_off_bad_input_and_a_failing_model(user_client, suggestions_on, scripted_agent, script):
    suggestions_on(enabled=False)
    scripted_agent("An answer.")
    tid = new_thread(user_client)
    ask(user_client, tid, "q")
    assert user_client.get("/api/suggestions/config").json()["enabled"] is False
    off = user_client.post(f"/api/threads/{tid}/suggestions", {}, format="json")
    assert off.status_code == 200 and off.json() == {"suggestions": [], "enabled": False}
    suggestions_on()
    for body, field in (({"n": 4}, "n"), ({"n": "2"}, "n"), ({"messages": "hi"}, "messages"), ({"model_name": "nope"}, "model_name"),
                        ({"extra": 1}, "extra")):
        bad = user_client.post(f"/api/threads/{tid}/suggestions", body, format="json")
        assert bad.status_code == 422 and field in bad.json()["detail"], body
    script()  # the model has nothing to say (500s): no chips, no error for the user
    failed = user_client.post(f"/api/threads/{tid}/suggestions", {}, format="json")
    assert failed.status_code == 200 and failed.json()["suggestions"] == []
