"""Regenerate, edit-and-rerun, branch and per-run reads through the API, in both checkpoint
modes (full and delta): the visible history after each, as a reload would read it."""

import pytest

from apps.runs.graphs import clear_graph_cache
from apps.runs.models import Run, RunEvent
from harness.config import thread_user_data_dir
from harness.testing import Reply, call, tool_reply
from tests.apps.runs.test_runs_api import new_thread, wait_for_status
from tests.support import agents

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]

FACTORIES = {"full": "tests.support.agents:make_scripted_full_agent", "delta": "tests.support.agents:make_scripted_delta_agent"}


@pytest.fixture(params=["full", "delta"])
def agent(request, settings):
    settings.DEERFLOW_AGENT_FACTORY = FACTORIES[request.param]

    def set_script(*items):
        clear_graph_cache()
        return agents.set_script(*items)

    yield set_script
    clear_graph_cache()


def ask(client, tid, text):
    run = client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": text}]}}, format="json")
    assert run.status_code == 200, run.content
    return wait_for_status(run.json()["run_id"], {"success", "error", "interrupted"})


def visible(client, tid):
    """The history as the chat page loads it after a reload (newest page, oldest first)."""
    page = client.get(f"/api/threads/{tid}/messages/page?limit=200").json()
    return [(r["content"]["type"], r["content"]["content"]) for r in page["data"] if r["content"]["content"]]


def state_texts(client, tid):
    return [(m["type"], m["content"]) for m in client.get(f"/api/threads/{tid}/state").json()["values"]["messages"]]


def test_regenerate_replaces_the_latest_answer_and_keeps_the_title(user_client, agent):
    model = agent("first answer", "second answer", "third answer")
    tid = new_thread(user_client)
    ask(user_client, tid, "question")
    user_client.patch(f"/api/threads/{tid}", {"metadata": {"pinned": True}}, format="json")
    from apps.threads.models import Thread

    Thread.objects.filter(pk=tid).update(title="My trip")

    response = user_client.post(f"/api/threads/{tid}/runs/regenerate", {}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["metadata"]["replay"]["kind"] == "regenerate" and body["replaces_run_id"]
    wait_for_status(body["run_id"], {"success"})
    assert visible(user_client, tid) == [("human", "question"), ("ai", "second answer")]
    assert state_texts(user_client, tid) == [("human", "question"), ("ai", "second answer")]
    # The model was asked the question once, without the superseded answer.
    assert [m.content for m in model.requests[1].messages if m.type != "system"] == ["question"]
    assert user_client.get(f"/api/threads/{tid}").json()["values"].get("title", "My trip") == "My trip"
    assert Thread.objects.get(pk=tid).title == "My trip"
    # The superseded answer is still in the checkpoint history.
    history = user_client.post(f"/api/threads/{tid}/history", {"limit": 20}, format="json").json()
    assert any(m["content"] == "first answer" for h in history for m in h["values"].get("messages", []))

    # Again: a regenerate of a regenerated answer hides both older attempts.
    again = user_client.post(f"/api/threads/{tid}/runs/regenerate", {}, format="json").json()
    wait_for_status(again["run_id"], {"success"})
    assert visible(user_client, tid) == [("human", "question"), ("ai", "third answer")]
    assert state_texts(user_client, tid) == [("human", "question"), ("ai", "third answer")]


def test_regenerate_after_two_turns_keeps_the_first(user_client, agent):
    agent("a1", "a2", "a2 again", "a3")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    run = user_client.post(f"/api/threads/{tid}/runs/regenerate", {}, format="json").json()
    wait_for_status(run["run_id"], {"success"})
    expected = [("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2 again")]
    assert visible(user_client, tid) == expected and state_texts(user_client, tid) == expected
    ask(user_client, tid, "q3")
    assert visible(user_client, tid) == expected + [("human", "q3"), ("ai", "a3")]
    assert state_texts(user_client, tid) == expected + [("human", "q3"), ("ai", "a3")]


def test_edit_and_rerun_replays_with_the_new_text(user_client, agent):
    model = agent("a1", "a2", "edited answer")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    human = RunEvent.objects.filter(thread_id=tid, event_type="llm.human.input").order_by("-seq").first()
    response = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate",
                                {"content": "q2, edited", "message_id": human.content["id"]}, format="json")
    assert response.status_code == 201, response.content
    wait_for_status(response.json()["run_id"], {"success"})
    expected = [("human", "q1"), ("ai", "a1"), ("human", "q2, edited"), ("ai", "edited answer")]
    assert visible(user_client, tid) == expected and state_texts(user_client, tid) == expected
    assert [m.content for m in model.requests[-1].messages if m.type != "system"] == ["q1", "a1", "q2, edited"]


def test_a_failed_edit_restores_the_conversation_and_says_so(user_client, agent):
    agent("a1", "a2", Reply(status=400))
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    before = state_texts(user_client, tid)
    run = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate", {"content": "q2 but worse"}, format="json").json()
    assert wait_for_status(run["run_id"], {"error", "success"}).status == "error"
    assert state_texts(user_client, tid) == before
    assert visible(user_client, tid) == before
    notice = RunEvent.objects.get(run_id=run["run_id"], event_type="replay.restored")
    assert "failed" in notice.content and notice.metadata["replay_kind"] == "edit"
    # The thread goes on from the restored state.
    agent("a3")
    ask(user_client, tid, "q3")
    assert visible(user_client, tid) == before + [("human", "q3"), ("ai", "a3")]


def test_a_cancelled_edit_restores_the_conversation(user_client, agent):
    agent("a1", tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    before = state_texts(user_client, tid)
    run = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate", {"content": "q1 slowly"}, format="json").json()
    agents.wait_for_slow_tool()
    assert user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel?wait=1").status_code == 204
    assert Run.objects.get(pk=run["run_id"]).stop_reason == "cancelled"
    assert state_texts(user_client, tid) == before == [("human", "q1"), ("ai", "a1")]
    assert visible(user_client, tid) == before
    assert "cancelled" in RunEvent.objects.get(run_id=run["run_id"], event_type="replay.restored").content


def test_bad_replays_are_refused_and_change_nothing(user_client, agent):
    agent("a1", tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    nothing = user_client.post(f"/api/threads/{tid}/runs/regenerate", {}, format="json")
    assert nothing.status_code == 404 and "no answer to regenerate" in nothing.json()["detail"]
    assert user_client.post(f"/api/threads/{tid}/runs/edit-regenerate", {"content": "x"}, format="json").status_code == 404
    ask(user_client, tid, "q1")
    ai = RunEvent.objects.get(thread_id=tid, event_type="llm.ai.response")
    not_editable = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate", {"content": "x", "message_id": ai.content["id"]}, format="json")
    assert not_editable.status_code == 409 and "not editable" in not_editable.json()["detail"]
    unknown = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate", {"content": "x", "message_id": "nope"}, format="json")
    assert unknown.status_code == 404 and "nope" in unknown.json()["detail"]
    empty = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate", {"content": "  "}, format="json")
    assert empty.status_code == 422 and "content" in empty.json()["detail"]
    odd = user_client.post(f"/api/threads/{tid}/runs/regenerate", {"input": {}}, format="json")
    assert odd.status_code == 422 and "input" in odd.json()["detail"]
    assert state_texts(user_client, tid) == [("human", "q1"), ("ai", "a1")]
    busy_run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "slow"}]}}, format="json").json()
    busy = user_client.post(f"/api/threads/{tid}/runs/regenerate", {}, format="json")
    assert busy.status_code == 409 and "active run" in busy.json()["detail"]
    user_client.post(f"/api/threads/{tid}/runs/{busy_run['run_id']}/cancel?wait=1")
    assert Run.objects.filter(thread_id=tid, metadata__has_key="replay").count() == 0


def test_branch_from_latest_copies_files_and_survives_runs_and_regenerate(user_client, user, agent):
    agent("a1", "a2", "branch a3", "branch a3 again")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    workspace = thread_user_data_dir(user.pk, tid) / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.md").write_text("kept")
    latest_ai = RunEvent.objects.filter(thread_id=tid, event_type="llm.ai.response").order_by("-seq").first()
    response = user_client.post(f"/api/threads/{tid}/branches", {"message_id": latest_ai.content["id"]}, format="json")
    assert response.status_code == 201, response.content
    branch = response.json()
    assert branch["workspace_clone_mode"] == "copied" and branch["seeded_turns"] == 2
    bid = branch["thread_id"]
    assert (thread_user_data_dir(user.pk, bid) / "workspace" / "notes.md").read_text() == "kept"
    inherited = [("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2")]
    assert visible(user_client, bid) == inherited and state_texts(user_client, bid) == inherited
    assert user_client.get(f"/api/threads/{bid}").json()["metadata"]["branched_from"]["thread_id"] == tid

    ask(user_client, bid, "q3")
    assert visible(user_client, bid) == inherited + [("human", "q3"), ("ai", "branch a3")]
    regen = user_client.post(f"/api/threads/{bid}/runs/regenerate", {}, format="json").json()
    wait_for_status(regen["run_id"], {"success"})
    assert visible(user_client, bid) == inherited + [("human", "q3"), ("ai", "branch a3 again")]
    assert state_texts(user_client, bid) == inherited + [("human", "q3"), ("ai", "branch a3 again")]
    # The source thread is untouched.
    assert visible(user_client, tid) == inherited == state_texts(user_client, tid)


def test_branch_from_an_older_turn_skips_files_and_regenerates_one_turn(user_client, user, agent):
    agent("a1", "a2", "a1 again")
    tid = new_thread(user_client)
    first = ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    (thread_user_data_dir(user.pk, tid) / "workspace").mkdir(parents=True, exist_ok=True)
    response = user_client.post(f"/api/threads/{tid}/branches", {"run_id": str(first.pk)}, format="json")
    assert response.status_code == 201, response.content
    branch = response.json()
    assert branch["workspace_clone_mode"] == "skipped_historical_turn"
    assert not (thread_user_data_dir(user.pk, branch["thread_id"]) / "workspace").exists()
    bid = branch["thread_id"]
    assert visible(user_client, bid) == [("human", "q1"), ("ai", "a1")] == state_texts(user_client, bid)
    regen = user_client.post(f"/api/threads/{bid}/runs/regenerate", {}, format="json").json()
    wait_for_status(regen["run_id"], {"success"})
    assert visible(user_client, bid) == [("human", "q1"), ("ai", "a1 again")] == state_texts(user_client, bid)


def test_bad_branches_are_refused(user_client, other_user, agent):
    agent("a1")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    human = RunEvent.objects.get(thread_id=tid, event_type="llm.human.input")
    unknown = user_client.post(f"/api/threads/{tid}/branches", {"message_id": "no-such-message"}, format="json")
    assert unknown.status_code == 404 and "no-such-message" in unknown.json()["detail"]
    not_ai = user_client.post(f"/api/threads/{tid}/branches", {"message_id": human.content["id"]}, format="json")
    assert not_ai.status_code == 404
    assert user_client.post(f"/api/threads/{tid}/branches", {}, format="json").status_code == 422
    assert user_client.post(f"/api/threads/{tid}/branches", {"run_id": "x", "bogus": 1}, format="json").status_code == 422
    from rest_framework.test import APIClient

    other = APIClient()
    other.force_authenticate(other_user)
    assert other.post(f"/api/threads/{tid}/branches", {"run_id": str(human.run_id)}, format="json").status_code == 404
    from apps.threads.models import Thread

    assert Thread.objects.count() == 1


def test_per_run_messages_page_forwards(user_client, agent):
    agent(tool_reply(call("progress", note="one")), tool_reply(call("progress", note="two")), "done")
    tid = new_thread(user_client)
    run = ask(user_client, tid, "work")
    first = user_client.get(f"/api/threads/{tid}/runs/{run.pk}/messages?limit=2").json()
    assert first["has_more"] is True and [r["event_type"] for r in first["data"]] == ["llm.human.input", "llm.ai.response"]
    rest = user_client.get(f"/api/threads/{tid}/runs/{run.pk}/messages?limit=50&after_seq={first['next_after_seq']}").json()
    assert rest["has_more"] is False and [r["event_type"] for r in rest["data"]] == [
        "llm.tool.result", "llm.ai.response", "llm.tool.result", "llm.ai.response"]
    assert rest["data"][-1]["content"]["content"] == "done"
    events = user_client.get(f"/api/threads/{tid}/runs/{run.pk}/events?event_types=llm.tool.result").json()
    assert [e["event_type"] for e in events] == ["llm.tool.result", "llm.tool.result"]
    bad = user_client.get(f"/api/threads/{tid}/runs/{run.pk}/messages?limit=0")
    assert bad.status_code == 422 and "limit" in bad.json()["detail"]
