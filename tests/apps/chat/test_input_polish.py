"""The composer's Polish button (``POST /api/input-polish``, DeerFlow's shapes): one call to the
(loopback) model rewrites a draft; nothing is stored; off by config; bad input named."""

import os
from pathlib import Path

import pytest
import yaml
from rest_framework.test import APIClient

from tests.apps.runs.test_runs_api import new_thread

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def other_client(other_user):
    client = APIClient()
    client.force_authenticate(other_user)
    return client


@pytest.fixture
def polish_config(tmp_path, monkeypatch, model_server):
    def apply(**section):
        base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
        base["models"][0]["base_url"] = model_server.base_url
        base["input_polish"] = {"enabled": True, **section}
        path = tmp_path / "config-polish.yaml"
        path.write_text(yaml.safe_dump(base))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))

    return apply


def _threads_and_runs(client) -> tuple[int, int]:
    threads = client.post("/api/threads/search", {"limit": 100}, format="json").json()
    return len(threads), sum(len(client.get(f"/api/threads/{t['thread_id']}/runs").json()) for t in threads)


def test_a_draft_comes_back_rewritten_and_nothing_is_stored(user_client, polish_config, script, model_server):
    polish_config()
    tid = new_thread(user_client)
    before = _threads_and_runs(user_client)
    script("<think>make it precise</think>```\nSummarise /tmp/notes.md in three bullet points, in English.\n```")
    response = user_client.post("/api/input-polish", {"text": "  sum up /tmp/notes.md pls  ", "locale": "en-US", "thread_id": tid},
                                format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"rewritten_text": "Summarise /tmp/notes.md in three bullet points, in English.", "changed": True}
    asked = str(model_server.requests[-1])
    assert "sum up /tmp/notes.md pls" in asked and "en-US" in asked  # the trimmed draft and the locale went to the model
    assert _threads_and_runs(user_client) == before  # no thread, no run, no message

    script("Already clear.")
    same = user_client.post("/api/input-polish", {"text": "Already clear."}, format="json")
    assert same.json() == {"rewritten_text": "Already clear.", "changed": False}


def test_bad_drafts_a_foreign_thread_and_a_failing_model(user_client, other_client, polish_config, script):
    polish_config(max_chars=10)
    for body, field, code in (({"text": "   "}, "text", 422), ({"text": "x" * 11}, "text", 422), ({}, "text", 422),
                              ({"text": "hi", "colour": "red"}, "colour", 422), ({"text": 5, "locale": ["en"]}, "locale", 422)):
        bad = user_client.post("/api/input-polish", body, format="json")
        assert bad.status_code == code and field in str(bad.json()), (body, bad.content)
    # DeerFlow's new-chat page names a thread not created yet; another user's id is treated the
    # same way, ignored, so the answer tells nothing about it.
    theirs = new_thread(other_client)
    for thread_id in (theirs, "6f1c0c8e-0000-4000-8000-000000000000"):
        script("Hello there.")
        named = user_client.post("/api/input-polish", {"text": "hi", "thread_id": thread_id}, format="json")
        assert named.status_code == 200 and named.json()["rewritten_text"] == "Hello there.", named.content
    script()  # the model fails (500s): the user is told, nothing else happens
    failed = user_client.post("/api/input-polish", {"text": "hi"}, format="json")
    assert failed.status_code == 503 and "unchanged" in failed.json()["detail"]
    script("")  # an empty rewrite is no rewrite
    empty = user_client.post("/api/input-polish", {"text": "hi"}, format="json")
    assert empty.status_code == 503 and "unchanged" in empty.json()["detail"]


def test_off_by_config_is_a_404_with_the_key(user_client, polish_config):
    polish_config(enabled=False)
    off = user_client.post("/api/input-polish", {"text": "hi"}, format="json")
    assert off.status_code == 404 and "input_polish.enabled" in off.json()["detail"]
