"""Thread goals through the API, as DeerFlow runs them: after each turn a separate evaluator
call (the loopback OpenAI server, while the lead is the scripted model) decides met / not met /
blocked; continuations are more turns of the same run, up to the cap; the evaluator's tokens
count in the run's usage — in both checkpoint modes."""

import json
import os
from pathlib import Path

import pytest
import yaml

from apps.runs.models import Run
from harness.config.loader import get_app_config, reset_config_cache
from tests.apps.runs.test_runs_api import new_thread, stream
from tests.apps.threads.test_thread_actions import agent, ask  # noqa: F401 (agent is a fixture)

pytestmark = [pytest.mark.django_db(transaction=True)]


def verdict(satisfied, blocker="goal_not_met_yet", reason="more to do"):
    return json.dumps({"satisfied": satisfied, "blocker": "none" if satisfied else blocker, "reason": reason,
                       "evidence_summary": "seen in the answer"})


@pytest.fixture
def evaluator(tmp_path, monkeypatch, model_server, script):
    """config.yaml's model at the loopback server; returns ``script`` for the evaluator's verdicts."""
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    base["models"][0]["base_url"] = model_server.base_url
    path = tmp_path / "config-goals.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    return script


def goal_of(client, tid):
    return client.get(f"/api/threads/{tid}/goal").json()["goal"]


def shown(client, tid):
    rows = client.get(f"/api/threads/{tid}/messages/page?limit=50").json()["data"]
    return [r["content"]["content"] for r in rows if not (r["content"].get("additional_kwargs") or {}).get("hide_from_ui")]


def test_continuations_in_the_same_run_until_the_evaluator_says_met(user_client, agent, evaluator, model_server):  # noqa: F811
    model = agent("step one done", "step two done", "all three done")
    evaluator(verdict(False), verdict(False), verdict(True, reason="all three steps are there"))
    tid = new_thread(user_client)
    put = user_client.put(f"/api/threads/{tid}/goal", {"objective": "write three steps"}, format="json")
    assert put.status_code == 200 and put.json()["goal"]["status"] == "active"
    assert put.json()["goal"]["max_continuations"] == 8  # the default cap
    ask(user_client, tid, "start")
    runs = list(Run.objects.filter(thread_id=tid))
    assert len(runs) == 1 and runs[0].status == "success"  # one run, three turns
    goal = goal_of(user_client, tid)
    assert goal["status"] == "met" and goal["continuation_count"] == 2
    assert goal["last_evaluation"]["satisfied"] is True and goal["last_evaluation"]["reason"] == "all three steps are there"
    instruction = [m for m in model.requests[1].messages if m.type == "human"][-1]
    assert "write three steps" in instruction.content and "continuation 1 of at most 8" in instruction.content
    # The evaluator is its own call: it saw the goal and the visible answer, not the hidden instruction.
    judged = json.dumps(model_server.requests[0])
    assert "write three steps" in judged and "step one done" in judged and "goal_continuation" not in judged
    assert shown(user_client, tid) == ["start", "step one done", "step two done", "all three done"]
    # Its three calls are in the run's usage, beside the lead's three.
    run = Run.objects.get(pk=runs[0].pk)
    assert run.token_usage["goal_evaluator_tokens"] > 0 and run.token_usage["llm_call_count"] == 6


def test_a_blocked_goal_stands_down_with_its_blocker(user_client, agent, evaluator):  # noqa: F811
    agent("Which database should I use?", "never")
    evaluator(verdict(False, "needs_user_input", "the assistant asked which database to use"))
    tid = new_thread(user_client)
    user_client.put(f"/api/threads/{tid}/goal", {"objective": "set up the database"}, format="json")
    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream", {"input": {"messages": [{"role": "user", "content": "go"}]},
                                                                      "stream_mode": ["values", "custom"]})
    stopped = [e["data"] for e in events if e["event"] == "custom" and e["data"].get("type") == "goal_stopped"]
    assert stopped == [{"type": "goal_stopped", "status": "active", "stand_down_reason": "blocked:needs_user_input",
                        "blocker": "needs_user_input", "reason": "the assistant asked which database to use",
                        "continuations": 0, "max": 8}]
    goal = goal_of(user_client, tid)
    assert goal["status"] == "active" and goal["last_evaluation"]["blocker"] == "needs_user_input"
    assert shown(user_client, tid) == ["go", "Which database should I use?"]


def test_the_cap_stops_continuations(user_client, agent, evaluator):  # noqa: F811
    agent("a", "b", "c", "never")
    evaluator(verdict(False), verdict(False), verdict(False))
    tid = new_thread(user_client)
    user_client.put(f"/api/threads/{tid}/goal", {"objective": "go on", "max_continuations": 2}, format="json")
    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream", {"input": {"messages": [{"role": "user", "content": "start"}]},
                                                                      "stream_mode": ["values", "custom"]})
    announced = [e["data"] for e in events if e["event"] == "custom"]
    assert [(a["type"], a.get("n")) for a in announced] == [("goal_continuation", 1), ("goal_continuation", 2), ("goal_stopped", None)]
    assert announced[-1]["stand_down_reason"] == "max_continuations_reached"
    assert shown(user_client, tid) == ["start", "a", "b", "c"] and Run.objects.filter(thread_id=tid).count() == 1
    goal = goal_of(user_client, tid)
    assert goal["continuation_count"] == 2 and goal["last_evaluation"]["stand_down_reason"] == "max_continuations_reached"


def test_no_new_answer_twice_stands_down(user_client, agent, evaluator):  # noqa: F811
    agent("same answer", "same answer", "same answer", "never")
    evaluator(verdict(False), verdict(False), verdict(False))
    tid = new_thread(user_client)
    user_client.put(f"/api/threads/{tid}/goal", {"objective": "go on"}, format="json")
    ask(user_client, tid, "start")
    goal = goal_of(user_client, tid)
    assert goal["last_evaluation"]["stand_down_reason"] == "no_progress_detected" and goal["continuation_count"] == 2


def test_an_evaluator_that_answers_nonsense_stops_the_loop_and_says_so(user_client, agent, evaluator):  # noqa: F811
    agent("an answer", "never")
    evaluator("I think it is fine")
    tid = new_thread(user_client)
    user_client.put(f"/api/threads/{tid}/goal", {"objective": "go"}, format="json")
    run = ask(user_client, tid, "start")
    assert run.status == "success"  # the answer stands
    last = goal_of(user_client, tid)["last_evaluation"]
    assert last["stand_down_reason"] == "evaluator_failed" and "JSON" in last["reason"]


def test_goal_routes_refuse_bad_input_and_clear(user_client, agent, evaluator):  # noqa: F811
    agent("plain answer")
    evaluator(verdict(False))
    tid = new_thread(user_client)
    assert goal_of(user_client, tid) is None
    too_long = user_client.put(f"/api/threads/{tid}/goal", {"objective": "x" * 4001}, format="json")
    assert too_long.status_code == 422 and "4000" in too_long.json()["detail"]
    for body in ({"objective": ""}, {"objective": "ok", "max_continuations": 9}, {"objective": "ok", "max_continuations": -1},
                 {"objective": "ok", "max_continuations": True}, {"objective": "ok", "extra": 1}):
        response = user_client.put(f"/api/threads/{tid}/goal", body, format="json")
        assert response.status_code == 422 and response.json()["detail"], body
    assert "max_continuations" in user_client.put(f"/api/threads/{tid}/goal", {"objective": "ok", "max_continuations": 9},
                                                  format="json").json()["detail"]
    assert goal_of(user_client, tid) is None  # nothing was written
    assert user_client.put(f"/api/threads/{tid}/goal", {"objective": "ok", "max_continuations": 0}, format="json").status_code == 200
    ask(user_client, tid, "hello")
    goal = goal_of(user_client, tid)
    assert goal["continuation_count"] == 0 and goal["last_evaluation"]["stand_down_reason"] == "max_continuations_reached"
    assert user_client.delete(f"/api/threads/{tid}/goal").status_code == 204
    assert goal_of(user_client, tid) is None


def test_the_config_cap_is_the_default_and_is_checked(tmp_path, monkeypatch):
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    base["goals"] = {"max_continuations": 9}
    path = tmp_path / "config-bad.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    reset_config_cache()
    try:
        with pytest.raises(Exception) as raised:
            get_app_config()
        assert "goals.max_continuations" in str(raised.value)
        base["goals"] = {"max_continuations": 3, "model_name": "no-such-model"}
        path.write_text(yaml.safe_dump(base))
        reset_config_cache()
        with pytest.raises(Exception) as raised:
            get_app_config()
        assert "goals.model_name" in str(raised.value)
    finally:
        reset_config_cache()
