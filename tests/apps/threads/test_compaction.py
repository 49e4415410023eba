"""Manual compaction through the API with the real lead agent: older messages become the
thread's summary (made by the loopback model), the recent window stays, the next model
request carries the summary instead of the old messages — in both checkpoint modes."""

import os
from pathlib import Path

import pytest
import yaml

from apps.runs.graphs import clear_graph_cache
from datetime import timedelta

from django.utils import timezone

from apps.runs.models import Run
from tests.apps.runs.test_runs_api import new_thread
from tests.apps.threads.test_thread_actions import ask, state_texts, visible
from tests.support import agents

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=["full", "delta"])
def lead(request, settings, tmp_path, monkeypatch, model_server):
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    base["models"][0]["base_url"] = model_server.base_url
    base["summarization"] = {"enabled": False, "keep": {"type": "messages", "value": 2}}
    base["checkpoints"] = {"mode": request.param}
    path = tmp_path / "config-compact.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"

    def set_script(*items):
        clear_graph_cache()
        return agents.set_script(*items)

    yield set_script
    clear_graph_cache()


def test_compact_keeps_the_window_and_the_next_request_uses_the_summary(user_client, lead, script):
    model = lead("a1", "a2", "a3")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1 about llamas")
    ask(user_client, tid, "q2")
    before = user_client.get(f"/api/threads/{tid}/context").json()
    assert before["message_count"] == 4 and before["context_window"] == 32000 and before["used_tokens"] > 0

    script("SUMMARY: the user asked about llamas.")
    response = user_client.post(f"/api/threads/{tid}/compact")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["summary_text"] == "SUMMARY: the user asked about llamas."
    assert body["kept_messages"] == 2 and body["summarized_messages"] == 2
    assert state_texts(user_client, tid) == [("human", "q2"), ("ai", "a2")]
    assert user_client.get(f"/api/threads/{tid}/state").json()["values"]["summary_text"] == body["summary_text"]
    # The visible history is the journal: every message stays.
    assert [t for _, t in visible(user_client, tid)] == ["q1 about llamas", "a1", "q2", "a2"]
    after = user_client.get(f"/api/threads/{tid}/context").json()
    assert after["message_count"] == 2 and after["has_summary"] is True

    ask(user_client, tid, "q3")
    shown = "\n".join(str(m.content) for m in model.requests[-1].messages)
    assert "SUMMARY: the user asked about llamas." in shown and "q1 about llamas" not in shown
    assert "q2" in shown and "q3" in shown


def test_compaction_is_refused_during_a_run_and_when_short(user_client, user, lead, script):
    lead("a1", "a2")
    tid = new_thread(user_client)
    empty = user_client.post(f"/api/threads/{tid}/compact")
    assert empty.status_code == 409 and "no messages" in empty.json()["detail"]
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    script()  # the summary call fails (the model has no reply): 503, nothing written
    failed = user_client.post(f"/api/threads/{tid}/compact")
    assert failed.status_code == 503 and "summary could not be made" in failed.json()["detail"]
    assert not user_client.get(f"/api/threads/{tid}/state").json()["values"].get("summary_text")
    script("the summary")
    assert user_client.post(f"/api/threads/{tid}/compact").status_code == 200
    short = user_client.post(f"/api/threads/{tid}/compact")  # what is left is the kept window
    assert short.status_code == 409 and "too short" in short.json()["detail"]
    # A run in flight (as another process would hold it: the row is what admission sees).
    Run.objects.create(thread_id=tid, owner=user, status=Run.Status.RUNNING, lease_owner="elsewhere:1",
                       lease_expires_at=timezone.now() + timedelta(seconds=60))
    busy = user_client.post(f"/api/threads/{tid}/compact")
    assert busy.status_code == 409 and "active run" in busy.json()["detail"]
    Run.objects.filter(thread_id=tid, status=Run.Status.RUNNING).update(status=Run.Status.INTERRUPTED)
    assert user_client.get(f"/api/threads/{tid}/state").json()["values"]["summary_text"] == "the summary"
