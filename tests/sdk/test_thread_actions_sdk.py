"""Regenerate, edit-rerun and branch as an official langgraph-sdk user does them: the
DeerFlow routes through the SDK's HTTP client, the runs they start through ``runs.join``,
against the real lead agent (delta checkpoints, the default) on a live server."""

import pytest

pytestmark = [pytest.mark.slow]


def texts(messages):
    return [(m["type"], m["content"]) for m in messages if m["type"] in ("human", "ai") and m["content"]]


def test_regenerate_edit_and_branch_through_the_sdk(sdk, script):
    script("first", "first again", "edited answer", "branch answer")
    tid = sdk.threads.create()["thread_id"]
    sdk.runs.wait(tid, "lead_agent", input={"messages": [{"role": "user", "content": "hello"}]})

    run = sdk.http.post(f"/threads/{tid}/runs/regenerate", json={})
    assert run["metadata"]["replay"]["kind"] == "regenerate"
    joined = sdk.runs.join(tid, run["run_id"])
    assert texts(joined["messages"]) == [("human", "hello"), ("ai", "first again")]

    run = sdk.http.post(f"/threads/{tid}/runs/edit-regenerate", json={"content": "hello, edited"})
    sdk.runs.join(tid, run["run_id"])
    expected = [("human", "hello, edited"), ("ai", "edited answer")]
    assert texts(sdk.threads.get_state(tid)["values"]["messages"]) == expected
    page = sdk.http.get(f"/threads/{tid}/messages/page", params={"limit": 50})
    assert [(r["content"]["type"], r["content"]["content"]) for r in page["data"]] == expected

    branch = sdk.http.post(f"/threads/{tid}/branches", json={"run_id": run["run_id"]})
    bid = branch["thread_id"]
    assert sdk.threads.get(bid)["metadata"]["branched_from"] == {"thread_id": tid, "run_id": run["run_id"]}
    result = sdk.runs.wait(bid, "lead_agent", input={"messages": [{"role": "user", "content": "and then?"}]})
    assert texts(result["messages"]) == expected + [("human", "and then?"), ("ai", "branch answer")]
    page = sdk.http.get(f"/threads/{bid}/messages/page", params={"limit": 50})
    assert [(r["content"]["type"], r["content"]["content"]) for r in page["data"]] == expected + [("human", "and then?"), ("ai", "branch answer")]


def test_a_goal_continues_inside_the_same_run_until_the_evaluator_says_met(sdk, script):
    import json

    # One loopback model answers both: the lead's turns and the evaluator's verdicts, in turn.
    script("first step", json.dumps({"satisfied": False, "blocker": "goal_not_met_yet", "reason": "one step left"}),
           "second step", json.dumps({"satisfied": True, "blocker": "none", "reason": "both steps are done"}))
    tid = sdk.threads.create()["thread_id"]
    goal = sdk.http.put(f"/threads/{tid}/goal", json={"objective": "two steps", "max_continuations": 4})
    assert goal["goal"]["status"] == "active"
    parts = list(sdk.runs.stream(tid, "lead_agent", input={"messages": [{"role": "user", "content": "go"}]}, stream_mode=["values", "custom"]))
    custom = [p.data for p in parts if p.event == "custom" and isinstance(p.data, dict) and str(p.data.get("type", "")).startswith("goal_")]
    assert [c["type"] for c in custom] == ["goal_continuation", "goal_stopped"]
    assert custom[0]["n"] == 1 and custom[0]["max"] == 4 and custom[0]["blocker"] == "goal_not_met_yet"
    assert custom[1]["status"] == "met"
    assert sdk.http.get(f"/threads/{tid}/goal")["goal"]["last_evaluation"]["reason"] == "both steps are done"
    assert len(sdk.runs.list(tid)) == 1
    assert texts(sdk.threads.get_state(tid)["values"]["messages"])[-1] == ("ai", "second step")
