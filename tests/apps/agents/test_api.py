"""The agents API: CRUD, ownership and read-only sharing, bad input, versions, duplicates."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.threads.models import Thread

pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]

ANALYST = {"name": "Research-Analyst", "display_name": "Research analyst", "description": "Digs into sources.",
           "soul": "# Analyst\nYou cite every claim.", "model": "analyst-model",
           "model_settings": {"temperature": 0.2, "max_tokens": 800}, "thinking_enabled": False,
           "tool_groups": ["notes"], "skills": [], "memory_enabled": True, "avatar": "🔎", "color": "#336699"}


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_create_get_list_update_delete(user_client, agents_config):
    created = user_client.post("/api/agents", ANALYST, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["name"] == "research-analyst"  # names are lowercase
    assert body["model_settings"] == {"temperature": 0.2, "max_tokens": 800}
    assert body["tool_groups"] == ["notes"] and body["editable"] is True and body["version"] == 1
    assert body["assistant_id"]

    assert user_client.get("/api/agents/research-analyst").json()["soul"] == ANALYST["soul"]
    assert user_client.get(f"/api/agents/{body['assistant_id']}").json()["name"] == "research-analyst"
    assert [a["name"] for a in user_client.get("/api/agents").json()["agents"]] == ["research-analyst"]
    assert user_client.get("/api/agents?q=sources").json()["agents"][0]["name"] == "research-analyst"
    assert user_client.get("/api/agents?q=nothing-like-it").json()["agents"] == []

    updated = user_client.put("/api/agents/research-analyst", {"soul": "Be concise.", "tool_groups": None}, format="json")
    assert updated.status_code == 200, updated.content
    assert updated.json()["soul"] == "Be concise." and updated.json()["tool_groups"] is None
    assert updated.json()["version"] == 2
    # Sending the reply back unchanged is accepted and writes no version.
    again = user_client.put("/api/agents/research-analyst", updated.json(), format="json")
    assert again.status_code == 200 and again.json()["version"] == 2

    assert user_client.delete("/api/agents/research-analyst").status_code == 204
    assert user_client.get("/api/agents/research-analyst").status_code == 404


def test_check_name(user_client, agents_config):
    assert user_client.get("/api/agents/check?name=Writer").json() == {"available": True, "name": "writer"}
    user_client.post("/api/agents", {"name": "writer"}, format="json")
    assert user_client.get("/api/agents/check?name=writer").json() == {"available": False, "name": "writer"}
    bad = user_client.get("/api/agents/check?name=../etc")
    assert bad.status_code == 422 and "name" in bad.json()["detail"]


@pytest.mark.parametrize("body, named", [
    ({"name": "../evil"}, "name"),
    ({"name": "a/b"}, "name"),
    ({"name": "has space"}, "name"),
    ({"name": "x", "model": "gpt-nope"}, "gpt-nope"),
    ({"name": "x", "tool_groups": ["notes", "lasers"]}, "lasers"),
    ({"name": "x", "skills": ["no-such-skill"]}, "no-such-skill"),
    ({"name": "x", "model_settings": {"temperature": 9}}, "temperature"),
    ({"name": "x", "reasoning_effort": "extreme"}, "reasoning_effort"),
    ({"name": "x", "colour": "#fff"}, "colour"),
    ({}, "name"),
])
def test_bad_input_is_a_422_naming_it_and_writes_nothing(user_client, agents_config, body, named):
    response = user_client.post("/api/agents", body, format="json")
    assert response.status_code == 422, response.content
    assert named in response.json()["detail"]
    assert user_client.get("/api/agents").json()["agents"] == []


def test_duplicate_name_is_409(user_client, agents_config):
    assert user_client.post("/api/agents", {"name": "writer"}, format="json").status_code == 201
    response = user_client.post("/api/agents", {"name": "Writer"}, format="json")
    assert response.status_code == 409 and "writer" in response.json()["detail"]
    user_client.post("/api/agents", {"name": "editor"}, format="json")
    renamed = user_client.put("/api/agents/editor", {"name": "writer"}, format="json")
    assert renamed.status_code == 409


def test_another_users_agent_is_404_unless_shared_and_shared_is_read_only(user_client, user, other_user, agents_config):
    agent = user_client.post("/api/agents", {**ANALYST, "name": "private"}, format="json").json()
    bob = client_for(other_user)
    for path in ("/api/agents/private", f"/api/agents/{agent['assistant_id']}"):
        assert bob.get(path).status_code == 404
        assert bob.put(path, {"soul": "mine now"}, format="json").status_code == 404
        assert bob.delete(path).status_code == 404
    assert bob.get("/api/agents").json()["agents"] == []
    # The same name is free for another user.
    assert bob.post("/api/agents", {"name": "private"}, format="json").status_code == 201

    assert user_client.put("/api/agents/private", {"shared": True}, format="json").json()["shared"] is True
    seen = bob.get(f"/api/agents/{agent['assistant_id']}")
    assert seen.status_code == 200 and seen.json()["editable"] is False and seen.json()["owner"] == "alice"
    names = [(a["name"], a["owner"]) for a in bob.get("/api/agents").json()["agents"]]
    assert names == [("private", "bob"), ("private", "alice")]  # own first
    refused = bob.put(f"/api/agents/{agent['assistant_id']}", {"soul": "mine now"}, format="json")
    assert refused.status_code == 403 and "read-only" in refused.json()["detail"]
    assert bob.delete(f"/api/agents/{agent['assistant_id']}").status_code == 403
    assert user_client.get("/api/agents/private").json()["soul"] == ANALYST["soul"]

    # A shared agent can be copied and the copy is the copier's own.
    copy = bob.post(f"/api/agents/{agent['assistant_id']}/duplicate", {}, format="json")
    assert copy.status_code == 201 and copy.json()["name"] == "private-copy" and copy.json()["editable"] is True
    assert copy.json()["soul"] == ANALYST["soul"] and copy.json()["shared"] is False


def test_versions_keep_every_change(user_client, agents_config):
    user_client.post("/api/agents", {"name": "writer", "soul": "v1"}, format="json")
    user_client.put("/api/agents/writer", {"soul": "v2"}, format="json")
    user_client.put("/api/agents/writer", {"description": "Writes release notes"}, format="json")
    versions = user_client.get("/api/agents/writer/versions").json()["versions"]
    assert [v["version"] for v in versions] == [3, 2, 1]
    assert [v["settings"]["soul"] for v in versions] == ["v2", "v2", "v1"]
    assert versions[0]["settings"]["description"] == "Writes release notes"


def test_deleting_an_agent_keeps_its_threads_readable(user_client, user, agents_config):
    agent = user_client.post("/api/agents", {"name": "writer"}, format="json").json()
    thread = user_client.post("/api/threads", {"assistant_id": agent["assistant_id"]}, format="json").json()
    assert user_client.delete("/api/agents/writer").status_code == 204
    assert Thread.objects.get(pk=thread["thread_id"]).assistant_id == agent["assistant_id"]
    assert user_client.get(f"/api/threads/{thread['thread_id']}").status_code == 200
    run = user_client.post(f"/api/threads/{thread['thread_id']}/runs",
                           {"assistant_id": agent["assistant_id"], "input": {"messages": [{"role": "user", "content": "hi"}]}}, format="json")
    assert run.status_code == 404 and agent["assistant_id"] in run.json()["detail"]


def test_admin_lists_all_agents(admin_client, user_client, other_user, agents_config):
    user_client.post("/api/agents", {"name": "writer"}, format="json")
    client_for(other_user).post("/api/agents", {"name": "triage"}, format="json")
    page = admin_client.get("/admin/agents/agent/")
    assert page.status_code == 200
    assert b"writer" in page.content and b"triage" in page.content


def test_a_scheduled_task_may_use_ones_own_agent_not_another_users(user_client, other_user, agents_config):
    agent = user_client.post("/api/agents", {"name": "writer"}, format="json").json()
    task = {"title": "daily notes", "prompt": "write them", "cron": "0 7 * * *", "assistant_id": agent["assistant_id"]}
    created = user_client.post("/api/scheduled-tasks", task, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["assistant_id"] == agent["assistant_id"]
    refused = client_for(other_user).post("/api/scheduled-tasks", task, format="json")
    assert refused.status_code == 422 and "unknown assistant" in refused.json()["detail"]
