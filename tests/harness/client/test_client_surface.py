"""The embedded client on its own (no server): what a script using it sees of uploads,
artifacts, memory, goals, skills, trace ids and the context:memory event. What it answers
matches the server's routes: tests/harness/client/test_conformance.py."""

from __future__ import annotations

import asyncio

import pytest

from harness.agents import custom
from harness.client import DeerFlowClient
from harness.config import parse_config
from harness.errors import InvalidRequest, NotFound, ServiceUnavailable
from harness.observability.context import trace_id_var
from harness.testing import ScriptedChatModel


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def app():
    return parse_config("memory:\n  enabled: true\n  token_counting: char\nsuggestions:\n  enabled: true\n")


def test_uploads_land_in_the_users_thread_and_read_back_as_artifacts(home, tmp_path, app):
    client = DeerFlowClient(app_config=app, user_id="ana", model=ScriptedChatModel(script=[]), tools=[])
    local = tmp_path / "data.csv"
    local.write_text("a,b\n1,2\n")
    uploaded = client.upload_files("t1", [local])
    assert uploaded["success"] is True and uploaded["files"][0]["virtual_path"] == "/mnt/user-data/uploads/data.csv"
    assert (home / "users" / "ana" / "threads" / "t1" / "user-data" / "uploads" / "data.csv").read_text() == "a,b\n1,2\n"
    assert [f["filename"] for f in client.list_uploads("t1")["files"]] == ["data.csv"]
    assert client.get_artifact("t1", "/mnt/user-data/uploads/data.csv") == (b"a,b\n1,2\n", "text/csv")
    with pytest.raises(InvalidRequest):
        client.get_artifact("t1", "mnt/user-data/../../etc/passwd")
    with pytest.raises(NotFound):
        client.get_artifact("t1", "mnt/user-data/outputs/none.md")
    assert client.delete_upload("t1", "data.csv") == {"success": True, "message": "Deleted data.csv"}
    assert client.list_uploads("t1")["count"] == 0
    with pytest.raises(InvalidRequest):
        client.list_uploads("../other-user")
    with pytest.raises(FileNotFoundError):
        client.upload_files("t1", [tmp_path / "missing.txt"])


def test_memory_written_through_the_client_goes_into_the_next_turn_with_its_event(home, app):
    model = ScriptedChatModel(script=["First.", "Second."])
    client = DeerFlowClient(app_config=app, user_id="ana", model=model, tools=[])
    doc = client.create_memory_fact("Prefers metric units", category="preference", confidence=0.9)
    assert [f["content"] for f in doc["facts"]] == ["Prefers metric units"]
    assert client.get_memory_config()["token_counting"] == "char" and client.get_memory_status()["config"]["paused"] is False

    async def turn():
        return [e async for e in client.astream_events("How heavy?", thread_id="m1")]

    events = asyncio.run(turn())
    assert events[0].type == "custom" and events[0].data["type"] == "context:memory" and events[0].data["facts"] == 1
    assert "Prefers metric units" in str(model.requests[0].messages)

    client.set_memory_paused(True)
    events = list(client.stream("Again?", thread_id="m1"))
    assert not any(e.type == "custom" and e.data.get("type") == "context:memory" for e in events)


def test_each_turn_has_a_trace_id_the_caller_may_give(home, app):
    client = DeerFlowClient(app_config=app, user_id="ana", model=ScriptedChatModel(script=["a", "b", "c"]), tools=[])
    first = list(client.stream("one", thread_id="tr"))[-1].data
    second = list(client.stream("two", thread_id="tr"))[-1].data
    assert len(first["trace_id"]) == 32 and first["trace_id"] != second["trace_id"] and first["run_id"] != second["run_id"]
    assert list(client.stream("three", thread_id="tr", trace_id="caller-trace-1"))[-1].data["trace_id"] == "caller-trace-1"
    token = trace_id_var.set("bound-trace")
    try:
        client = DeerFlowClient(app_config=app, user_id="ana", model=ScriptedChatModel(script=["d"]), tools=[])
        assert list(client.stream("four", thread_id="tr2"))[-1].data["trace_id"] == "bound-trace"
    finally:
        trace_id_var.reset(token)


def test_goals_live_in_the_thread_state(home, app):
    client = DeerFlowClient(app_config=app, user_id="ana", model=ScriptedChatModel(script=["ok"]), tools=[])
    client.chat("start", thread_id="g1")
    set_ = client.set_goal("g1", "Finish the report", max_continuations=2)
    assert set_["goal"]["objective"] == "Finish the report" and set_["goal"]["max_continuations"] == 2
    assert client.get_goal("g1") == set_
    assert client.get_state("g1")["messages"][-1].content == "ok"  # the conversation is kept
    with pytest.raises(InvalidRequest, match="max_continuations"):
        client.set_goal("g1", "x", max_continuations=99)
    assert client.clear_goal("g1") == {"thread_id": "g1", "goal": None} == client.get_goal("g1")


def test_skills_turn_off_for_the_agent_and_custom_agents_need_the_server(home, app, monkeypatch):
    monkeypatch.setattr(custom, "_store", None)  # a process without the server's apps
    client = DeerFlowClient(app_config=app, user_id="ana", model=ScriptedChatModel(script=[]), tools=[])
    names = [s["name"] for s in client.list_skills()["skills"]]
    assert "deep-research" in names
    assert client.update_skill("deep-research", enabled=False)["enabled"] is False
    assert "deep-research" not in [s["name"] for s in client.list_skills(enabled_only=True)["skills"]]
    assert client.get_skill("deep-research")["content"].startswith("---")
    client.update_skill("deep-research", enabled=True)
    with pytest.raises(NotFound):
        client.get_skill("no-such-skill")
    with pytest.raises(ServiceUnavailable, match="server_client"):
        client.list_agents()


def test_suggestions_come_from_the_model_and_are_off_when_configured_off(home, app):
    model = ScriptedChatModel(script=['["Why?", "How?"]'])
    client = DeerFlowClient(app_config=app, user_id="ana", model=model, tools=[])
    messages = [{"role": "user", "content": "Tell me about tides"}, {"role": "assistant", "content": "The moon pulls."}]
    assert client.get_suggestions("s1", messages=messages, n=2) == {"suggestions": ["Why?", "How?"], "enabled": True}
    off = DeerFlowClient(app_config=parse_config("suggestions:\n  enabled: false\n"), model=model, tools=[])
    assert off.get_suggestions("s1", messages=messages) == {"suggestions": [], "enabled": False}
    with pytest.raises(InvalidRequest, match="n must be"):
        client.get_suggestions("s1", messages=messages, n=0)


def test_threads_list_newest_first_and_only_the_users_own(home, app):
    model = ScriptedChatModel(script=["a", "b", "c"])
    ana = DeerFlowClient(app_config=app, user_id="ana", model=model, tools=[])
    ana.chat("First topic", thread_id="older")
    ana.chat("Second topic", thread_id="newer")
    bob = DeerFlowClient(app_config=app, user_id="bob", model=model, tools=[], checkpointer=ana.checkpointer)
    bob.chat("Bob's own", thread_id="bobs")
    listed = ana.list_threads()["thread_list"]
    assert [t["thread_id"] for t in listed] == ["newer", "older"]
    assert listed[0]["title"] == "Second topic" and listed[0]["updated_at"] >= listed[0]["created_at"]
    assert [t["thread_id"] for t in ana.list_threads(limit=1)["thread_list"]] == ["newer"]
