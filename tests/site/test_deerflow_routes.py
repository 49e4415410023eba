"""DeerFlow's frontend calls, as its code sends them (frontend/src of bytedance/deer-flow):
path, method, request body, and the response fields the frontend reads. docs/api.md, "DeerFlow
routes", lists each with where the frontend makes the call."""

import pytest

from tests.apps.runs.test_runs_api import new_thread, wait_for_status
from tests.apps.threads.test_thread_actions import agent  # noqa: F401  (the scripted agent, in both checkpoint modes)

pytestmark = [pytest.mark.django_db(transaction=True)]


def ask(client, tid, text, prefix="/api"):
    run = client.post(f"{prefix}/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": text}]}}, format="json")
    assert run.status_code == 200, run.content
    return wait_for_status(run.json()["run_id"], {"success", "error", "interrupted"})


def messages(client, tid):
    return client.get(f"/api/threads/{tid}/state").json()["values"]["messages"]


def visible(client, tid):
    page = client.get(f"/api/threads/{tid}/messages/page?limit=200").json()
    return [(r["content"]["type"], r["content"]["content"]) for r in page["data"] if r["content"]["content"]]


def stream(client, tid, prepared, prefix="/api/langgraph"):
    """What DeerFlow's submitPreparedReplay sends next: thread.submit(input, {checkpoint, metadata})."""
    body = {"assistant_id": "lead_agent", "input": prepared["input"], "checkpoint": prepared["checkpoint"],
            "metadata": prepared["metadata"], "stream_mode": ["values", "messages-tuple"], "stream_resumable": True,
            "config": {"recursion_limit": 1000}, "context": {"thread_id": tid}}
    response = client.post(f"{prefix}/threads/{tid}/runs/stream", body, format="json")
    assert response.status_code == 200, response.content
    content = b"".join(response.streaming_content) if not getattr(response, "is_async", False) else _drain_async(response)
    assert b"event: end" in content
    return content


def _drain_async(response):
    from asgiref.sync import async_to_sync

    async def collect():
        return b"".join([chunk async for chunk in response.streaming_content])

    return async_to_sync(collect)()


# --- the LangGraph base URL and liveness ---------------------------------------------------------


def test_health_at_deerflows_path(client):
    body = client.get("/health").json()
    assert body["status"] == "healthy" and body["service"]


def test_the_langgraph_prefix_is_the_same_api(user_client, scripted_agent):
    scripted_agent("hi there")
    created = user_client.post("/api/langgraph/threads", {"metadata": {"k": "v"}}, format="json")
    assert created.status_code == 200
    tid = created.json()["thread_id"]
    ask(user_client, tid, "hello", prefix="/api/langgraph")
    assert user_client.get(f"/api/langgraph/threads/{tid}/state").json()["values"]["messages"][-1]["content"] == "hi there"
    assert user_client.get(f"/api/threads/{tid}").json()["metadata"]["k"] == "v"
    assert user_client.get("/api/langgraph/threads/nope-1/state").status_code == 404
    assert user_client.post("/api/langgraph/threads/search", {"limit": 5}, format="json").json()[0]["thread_id"] == tid


def test_the_langgraph_prefix_needs_the_same_credentials(client):
    response = client.post("/api/langgraph/threads", {}, content_type="application/json")
    assert response.status_code in (401, 403) and response.json()["detail"]


# --- rename: POST /threads/{id}/state {"values": {"title"}} (DeerFlow's rename dialog) -------------


def test_a_state_update_with_a_title_renames_the_thread_in_the_list(user_client, scripted_agent):
    scripted_agent("an answer")
    tid = new_thread(user_client)
    ask(user_client, tid, "first question")
    response = user_client.post(f"/api/threads/{tid}/state", {"values": {"title": "Trip to Lisbon"}}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["checkpoint"]["checkpoint_id"]
    found = user_client.post("/api/threads/search", {"limit": 10}, format="json").json()
    assert [(t["thread_id"], t["values"]["title"]) for t in found] == [(tid, "Trip to Lisbon")]
    # (The lead agent's state has a title channel too: tests/sdk/test_langgraph_sdk.py reads it back.)
    # Through the prefix DeerFlow's SDK client uses, too.
    user_client.post(f"/api/langgraph/threads/{tid}/state", {"values": {"title": "Lisbon, again"}}, format="json")
    assert user_client.post("/api/threads/search", {}, format="json").json()[0]["values"]["title"] == "Lisbon, again"


def test_a_title_that_is_not_text_is_a_422_and_changes_nothing(user_client, scripted_agent):
    scripted_agent("an answer")
    tid = new_thread(user_client)
    ask(user_client, tid, "q")
    before = user_client.post("/api/threads/search", {}, format="json").json()[0]["values"].get("title")
    response = user_client.post(f"/api/threads/{tid}/state", {"values": {"title": {"x": 1}}}, format="json")
    assert response.status_code == 422 and "title" in response.json()["detail"]
    assert user_client.post("/api/threads/search", {}, format="json").json()[0]["values"].get("title") == before


# --- GET /api/features, GET /api/models[/{name}] -------------------------------------------------


def test_features_as_the_frontend_reads_them(user_client):
    body = user_client.get("/api/features").json()
    # core/features/api.ts reads agents_api.enabled, browser_control.enabled, mcp_tasks.enabled
    assert body == {"agents_api": {"enabled": True}, "browser_control": {"enabled": False}, "mcp_tasks": {"enabled": False}}


def test_a_new_users_memory_has_a_last_updated_time_the_frontend_can_import(user_client):
    # memory-settings-page.tsx's isImportedMemory refuses a document whose lastUpdated is no
    # string, and the page shows its age; a user nothing was learned about yet has one too.
    body = user_client.get("/api/memory").json()
    assert isinstance(body["lastUpdated"], str) and body["lastUpdated"].endswith("Z")
    assert isinstance(body["user"], dict) and isinstance(body["history"], dict) and body["facts"] == []


def test_models_list_and_one_model(user_client):
    listed = user_client.get("/api/models").json()
    assert listed["token_usage"] == {"enabled": True}
    first = listed["models"][0]
    assert {"name", "model", "display_name", "description", "supports_thinking", "supports_reasoning_effort"} <= set(first)
    one = user_client.get(f"/api/models/{first['name']}")
    assert one.status_code == 200 and one.json() == first
    missing = user_client.get("/api/models/no-such-model")
    assert missing.status_code == 404 and missing.json() == {"detail": "Model 'no-such-model' not found"}


# --- channels: credential_fields as objects (channels/types.ts ChannelCredentialField) -----------


def test_channel_providers_give_credential_fields_as_objects(user_client):
    body = user_client.get("/api/channels/providers").json()
    assert isinstance(body["enabled"], bool)
    fields = {p["provider"]: p["credential_fields"] for p in body["providers"]}
    assert fields["slack"] == [
        {"name": "bot_token", "label": "Bot token", "type": "password", "required": True},
        {"name": "app_token", "label": "App token", "type": "password", "required": True},
    ]
    assert {"name": "app_id", "label": "App ID", "type": "text", "required": True} in fields["feishu"]
    for provider in body["providers"]:
        assert {"provider", "display_name", "enabled", "configured", "connectable", "auth_mode", "connection_status"} <= set(provider)


# --- POST /threads/{id}/branches {message_id, message_ids, title?} (threads/api.ts) ---------------


def test_branch_with_deerflows_message_ids(user_client, scripted_agent):
    scripted_agent("a1", "a2")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    first_ai = next(m for m in messages(user_client, tid) if m["type"] == "ai")
    body = {"message_id": first_ai["id"], "message_ids": [first_ai["id"]], "title": "A branch"}
    response = user_client.post(f"/api/threads/{tid}/branches", body, format="json")
    assert response.status_code == 201, response.content
    branch = response.json()
    assert branch["parent_thread_id"] == tid and branch["branched_from_message_id"] == first_ai["id"]
    assert branch["parent_checkpoint_id"] and branch["workspace_clone_mode"] and branch["history_seed_mode"]
    assert [m["content"] for m in messages(user_client, branch["thread_id"])] == ["q1", "a1"]
    # message_ids alone, as the frontend's messageIds.
    alone = user_client.post(f"/api/threads/{tid}/branches", {"message_ids": [first_ai["id"]]}, format="json")
    assert alone.status_code == 201, alone.content


def test_branch_message_ids_bad_input(user_client, scripted_agent):
    scripted_agent("a1", "a2")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    ai = [m["id"] for m in messages(user_client, tid) if m["type"] == "ai"]
    for body, status in [({"message_ids": "x"}, 422), ({"message_ids": [1]}, 422), ({"message_ids": ["nope"]}, 404),
                         ({"message_id": ai[0], "message_ids": [ai[1]]}, 422)]:
        response = user_client.post(f"/api/threads/{tid}/branches", body, format="json")
        assert response.status_code == status, (body, response.content)
        assert response.json()["detail"]


# --- regenerate / edit-regenerate: prepare, then the run the frontend streams (threads/hooks.ts) --


def test_regenerate_prepare_then_stream(user_client, agent):
    agent("first answer", "second answer")
    tid = new_thread(user_client)
    ask(user_client, tid, "question")
    user_client.post(f"/api/threads/{tid}/state", {"values": {"title": "Named"}}, format="json")
    ai = [m for m in messages(user_client, tid) if m["type"] == "ai"][-1]
    response = user_client.post(f"/api/threads/{tid}/runs/regenerate/prepare", {"message_id": ai["id"]}, format="json")
    assert response.status_code == 200, response.content
    prepared = response.json()
    assert set(prepared) == {"input", "checkpoint", "metadata", "target_run_id"}
    assert [m["content"] for m in prepared["input"]["messages"]] == ["question"] and prepared["input"]["title"] == "Named"
    assert prepared["checkpoint"]["checkpoint_id"] and prepared["metadata"]["regenerate_from_message_id"] == ai["id"]
    assert prepared["metadata"]["regenerate_from_run_id"] == prepared["target_run_id"]
    assert [m["content"] for m in messages(user_client, tid)] == ["question", "first answer"]  # prepare changed nothing

    stream(user_client, tid, prepared)
    assert [(m["type"], m["content"]) for m in messages(user_client, tid)] == [("human", "question"), ("ai", "second answer")]
    assert visible(user_client, tid) == [("human", "question"), ("ai", "second answer")]
    assert user_client.post("/api/threads/search", {}, format="json").json()[0]["values"]["title"] == "Named"


def test_regenerate_prepare_refuses_what_cannot_be_regenerated(user_client, scripted_agent):
    scripted_agent("a1", "a2")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    msgs = messages(user_client, tid)
    old_ai = [m for m in msgs if m["type"] == "ai"][0]
    human = [m for m in msgs if m["type"] == "human"][-1]
    url = f"/api/threads/{tid}/runs/regenerate/prepare"
    for body, status, detail in [({"message_id": old_ai["id"]}, 409, "Only the latest assistant message can be regenerated"),
                                 ({"message_id": human["id"]}, 409, "Only visible assistant messages can be regenerated"),
                                 ({"message_id": "nope"}, 404, "Message nope not found"),
                                 ({}, 422, None), ({"message_id": 3}, 422, None), ({"message_id": "x", "extra": 1}, 422, None)]:
        response = user_client.post(url, body, format="json")
        assert response.status_code == status, (body, response.content)
        assert response.json()["detail"] == detail if detail else response.json()["detail"]
    assert user_client.post("/api/threads/nope-1/runs/regenerate/prepare", {"message_id": "x"}, format="json").status_code == 404


def test_edit_regenerate_prepare_then_stream(user_client, agent):
    agent("first answer", "edited answer")
    tid = new_thread(user_client)
    ask(user_client, tid, "question")
    human = [m for m in messages(user_client, tid) if m["type"] == "human"][-1]
    url = f"/api/threads/{tid}/runs/edit-regenerate/prepare"
    unchanged = user_client.post(url, {"human_message_id": human["id"], "replacement_text": "question"}, format="json")
    assert unchanged.status_code == 409 and unchanged.json()["detail"] == "Edited message is unchanged"
    assert user_client.post(url, {"human_message_id": human["id"], "replacement_text": "  "}, format="json").status_code == 422
    assert user_client.post(url, {"human_message_id": "nope", "replacement_text": "x"}, format="json").status_code == 404

    response = user_client.post(url, {"human_message_id": human["id"], "replacement_text": "better question"}, format="json")
    assert response.status_code == 200, response.content
    prepared = response.json()
    assert {"input", "checkpoint", "metadata", "target_run_id", "replacement_human_message_id", "source_message_ids"} <= set(prepared)
    # getOptimisticMessages reads input.messages; getSupersededMessageIds reads source_message_ids.
    assert prepared["input"]["messages"][-1] == {"role": "user", "content": "better question", "id": prepared["replacement_human_message_id"]}
    assert human["id"] in prepared["source_message_ids"]

    stream(user_client, tid, prepared)
    assert [(m["type"], m["content"]) for m in messages(user_client, tid)] == [("human", "better question"), ("ai", "edited answer")]
    assert visible(user_client, tid) == [("human", "better question"), ("ai", "edited answer")]


# --- feedback and suggestions: DeerFlow's paths are ours (core/api/feedback.ts, input-box.tsx) ----


def test_feedback_put_and_delete(user_client, scripted_agent):
    scripted_agent("an answer")
    tid = new_thread(user_client)
    run = ask(user_client, tid, "q")
    url = f"/api/threads/{tid}/runs/{run.pk}/feedback"
    put = user_client.put(url, {"rating": 1, "comment": "good"}, format="json")
    assert put.status_code == 200, put.content
    assert {"feedback_id", "run_id", "thread_id", "rating", "comment", "created_at"} <= set(put.json())
    assert put.json()["rating"] == 1
    bad = user_client.put(url, {"rating": 5}, format="json")
    assert 400 <= bad.status_code < 500 and bad.json()["detail"]
    deleted = user_client.delete(url)
    assert deleted.status_code == 200 and deleted.json()["success"] is True


def test_suggestions_config(user_client):
    body = user_client.get("/api/suggestions/config").json()
    assert {"enabled", "max_suggestions"} <= set(body)


def test_a_failed_prepared_replay_restores_the_conversation(user_client, agent):
    from harness.testing import Reply

    from apps.runs.models import RunEvent

    agent("a1", "a2", Reply(status=400))
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    before = [(m["type"], m["content"]) for m in messages(user_client, tid)]
    human = [m for m in messages(user_client, tid) if m["type"] == "human"][-1]
    prepared = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate/prepare",
                                {"human_message_id": human["id"], "replacement_text": "q2 but worse"}, format="json").json()
    body = {"assistant_id": "lead_agent", "input": prepared["input"], "checkpoint": prepared["checkpoint"], "metadata": prepared["metadata"]}
    run = user_client.post(f"/api/threads/{tid}/runs", body, format="json").json()
    assert wait_for_status(run["run_id"], {"error", "success"}).status == "error"
    assert [(m["type"], m["content"]) for m in messages(user_client, tid)] == before
    assert visible(user_client, tid) == before
    assert RunEvent.objects.filter(run_id=run["run_id"], event_type="replay.restored").exists()
