"""Thread goals through the API: continuation runs start on their own until the agent
declares the goal met, the cap is reached, or two continuations make no progress — in both
checkpoint modes. The stream of a finished run announces the next one."""

import time

import pytest

from apps.runs.models import Run, RunEvent
from tests.apps.runs.test_runs_api import new_thread, wait_for_status
from tests.apps.threads.test_thread_actions import agent, ask  # noqa: F401 (agent is a fixture)

pytestmark = [pytest.mark.django_db(transaction=True)]


def settle(tid, runs, timeout=20):
    """Until the thread has ``runs`` runs and none is active."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        qs = Run.objects.filter(thread_id=tid)
        if qs.count() >= runs and not qs.filter(status__in=Run.ACTIVE_STATUSES).exists():
            time.sleep(0.3)  # a continuation admitted just now would show here
            if Run.objects.filter(thread_id=tid).count() == qs.count() and not Run.objects.filter(thread_id=tid, status__in=Run.ACTIVE_STATUSES).exists():
                return list(Run.objects.filter(thread_id=tid).order_by("created_at"))
        time.sleep(0.05)
    raise AssertionError(f"thread {tid} has {Run.objects.filter(thread_id=tid).count()} runs")


def goal_of(client, tid):
    return client.get(f"/api/threads/{tid}/goal").json()["goal"]


def test_continuations_until_the_agent_declares_the_goal_met(user_client, agent):  # noqa: F811
    model = agent("step one done", "step two done", "all done\nGOAL_MET")
    tid = new_thread(user_client)
    put = user_client.put(f"/api/threads/{tid}/goal", {"objective": "write three steps", "max_continuations": 8}, format="json")
    assert put.status_code == 200 and put.json()["goal"]["status"] == "active"
    ask(user_client, tid, "start")
    runs = settle(tid, 3)
    assert len(runs) == 3 and [r.status for r in runs] == ["success"] * 3
    assert [r.metadata.get("goal_continuation", {}).get("n") for r in runs] == [None, 1, 2]
    goal = goal_of(user_client, tid)
    assert goal["status"] == "met" and goal["continuations"] == 2
    instruction = [m for m in model.requests[1].messages if m.type == "human"][-1]
    assert "write three steps" in instruction.content and "continuation 1 of at most 8" in instruction.content
    # The instructions are journaled marked hide_from_ui: the chat does not show them.
    rows = user_client.get(f"/api/threads/{tid}/messages/page?limit=50").json()["data"]
    shown = [r["content"]["content"] for r in rows if not (r["content"].get("additional_kwargs") or {}).get("hide_from_ui")]
    assert shown == ["start", "step one done", "step two done", "all done\nGOAL_MET"]


def test_the_cap_stops_continuations(user_client, agent):  # noqa: F811
    agent("a", "b", "c", "never")
    tid = new_thread(user_client)
    user_client.put(f"/api/threads/{tid}/goal", {"objective": "go on", "max_continuations": 2}, format="json")
    ask(user_client, tid, "start")
    runs = settle(tid, 3)
    assert len(runs) == 3
    assert goal_of(user_client, tid)["status"] == "cap_reached"


def test_no_progress_stops_continuations(user_client, agent):  # noqa: F811
    agent("same answer", "same answer", "same answer", "never")
    tid = new_thread(user_client)
    user_client.put(f"/api/threads/{tid}/goal", {"objective": "go on", "max_continuations": 8}, format="json")
    ask(user_client, tid, "start")
    runs = settle(tid, 3)
    assert len(runs) == 3
    goal = goal_of(user_client, tid)
    assert goal["status"] == "no_progress" and goal["no_progress"] == 2


def test_goal_routes_refuse_bad_input_and_clear(user_client, agent):  # noqa: F811
    agent("plain answer")
    tid = new_thread(user_client)
    assert goal_of(user_client, tid) is None
    too_long = user_client.put(f"/api/threads/{tid}/goal", {"objective": "x" * 4001}, format="json")
    assert too_long.status_code == 422 and "4000" in too_long.json()["detail"]
    for body in ({"objective": ""}, {"objective": "ok", "max_continuations": 9}, {"objective": "ok", "max_continuations": True},
                 {"objective": "ok", "extra": 1}):
        assert user_client.put(f"/api/threads/{tid}/goal", body, format="json").status_code == 422, body
    assert goal_of(user_client, tid) is None
    assert user_client.put(f"/api/threads/{tid}/goal", {"objective": "ok", "max_continuations": 0}, format="json").status_code == 200
    ask(user_client, tid, "hello")
    runs = settle(tid, 1)
    assert len(runs) == 1 and goal_of(user_client, tid)["status"] == "cap_reached"
    assert user_client.delete(f"/api/threads/{tid}/goal").status_code == 204
    assert goal_of(user_client, tid) is None
    assert not RunEvent.objects.filter(thread_id=tid, event_type="run.error").exists()


def test_the_finished_runs_stream_announces_the_continuation(user_client, agent):  # noqa: F811
    from tests.apps.runs.test_runs_api import stream

    agent("first step", "done\nGOAL_MET")
    tid = new_thread(user_client)
    user_client.put(f"/api/threads/{tid}/goal", {"objective": "two steps", "max_continuations": 8}, format="json")
    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream", {"input": {"messages": [{"role": "user", "content": "go"}]}})
    announced = [e["data"] for e in events if e["event"] == "custom"]
    assert events[-1]["event"] == "end" and len(announced) == 1
    assert announced[0]["type"] == "goal_continuation" and announced[0]["n"] == 1 and announced[0]["max"] == 8
    wait_for_status(announced[0]["run_id"], {"success"})
    settle(tid, 2)
    assert goal_of(user_client, tid)["status"] == "met"


def test_editing_the_question_replaces_its_continuations_too(user_client, agent):  # noqa: F811
    agent("a1", "c1", "e1", "e2")
    tid = new_thread(user_client)
    user_client.put(f"/api/threads/{tid}/goal", {"objective": "go", "max_continuations": 1}, format="json")
    ask(user_client, tid, "q")
    settle(tid, 2)
    question = RunEvent.objects.get(thread_id=tid, event_type="llm.human.input", content__content="q")
    edit = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate", {"content": "q edited", "message_id": question.content["id"]}, format="json")
    assert edit.status_code == 201, edit.content
    settle(tid, 4)
    rows = user_client.get(f"/api/threads/{tid}/messages/page?limit=50").json()["data"]
    shown = [r["content"]["content"] for r in rows if not (r["content"].get("additional_kwargs") or {}).get("hide_from_ui")]
    assert shown == ["q edited", "e1", "e2"]
    messages = user_client.get(f"/api/threads/{tid}/state").json()["values"]["messages"]
    assert [m["content"] for m in messages if m["type"] == "ai"] == ["e1", "e2"]
