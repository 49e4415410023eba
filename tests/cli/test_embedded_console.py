"""The console's embedded side: the agent in this process with the scripted model, threads
kept in a SQLite checkpointer, so a question asked in one session is answered after a restart."""

import asyncio

import pytest

from deerflow_cli.backend import BackendError
from deerflow_cli.embedded import EmbeddedBackend
from deerflow_cli.events import Ask, Started, Text, ToolCall, ToolResult, history_events
from harness.config import parse_config
from harness.testing import ScriptedChatModel, call, tool_reply

CONFIG = """
models:
  - {name: main, display_name: Main, use: 'langchain_openai:ChatOpenAI', model: m, base_url: 'http://127.0.0.1:9/v1', api_key: k}
"""


async def collect(backend, thread_id, **kwargs):
    return [event async for event in backend.turn(thread_id, **kwargs)]


def test_a_question_survives_a_restart_and_its_answer_resumes_the_run(tmp_path, monkeypatch, memory_skill_state):
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    model = ScriptedChatModel(script=[
        tool_reply(call("ask_clarification", question="Which city?", options=["Paris", "Berlin"])),
        "Starting from **Berlin**.",
    ])
    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"
    app = parse_config(CONFIG)

    async def first_session():
        backend = EmbeddedBackend(checkpoints=url, model=model, tools=[], app_config=app)
        try:
            thread_id = await backend.new_thread()
            events = await collect(backend, thread_id, text="Plan a trip")
            assert [c.name for c in events if isinstance(c, ToolCall)] == ["ask_clarification"]
            (ask,) = [e for e in events if isinstance(e, Ask)]
            assert ask.value["type"] == "clarification" and ask.value["human_input"]["options"] == ["Paris", "Berlin"]
            assert [m.name for m in await backend.models()] == ["main"]
            return thread_id
        finally:
            await backend.close()

    async def second_session(thread_id):
        backend = EmbeddedBackend(checkpoints=url, model=model, tools=[], app_config=app)
        try:
            assert [t.thread_id for t in await backend.threads()] == [thread_id]
            loaded = await backend.load(thread_id)
            assert [a["type"] for a in loaded.asks] == ["clarification"]
            assert [item for kind, item in history_events(loaded.messages) if kind == "user"] == ["Plan a trip"]
            events = await collect(backend, thread_id, resume="Berlin")
            assert isinstance(events[0], Started)
            assert any(isinstance(e, ToolResult) and "Berlin" in e.content for e in events)
            assert "".join(e.delta for e in events if isinstance(e, Text)) == "Starting from **Berlin**."
            assert (await backend.load(thread_id)).asks == []
        finally:
            await backend.close()

    thread_id = asyncio.run(first_session())
    asyncio.run(second_session(thread_id))


def test_an_upload_lands_in_the_threads_uploads(tmp_path, monkeypatch):
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    source = tmp_path / "report.csv"
    source.write_text("a,b\n1,2\n")
    backend = EmbeddedBackend(checkpoints=f"sqlite:///{tmp_path / 'c.sqlite'}", user_id="ada")

    async def upload():
        try:
            return await backend.upload("t-1", source)
        finally:
            await backend.close()

    assert asyncio.run(upload()) == "/mnt/user-data/uploads/report.csv"
    assert (tmp_path / "home/users/ada/threads/t-1/user-data/uploads/report.csv").read_text() == "a,b\n1,2\n"
    with pytest.raises(BackendError, match="not a file"):
        asyncio.run(EmbeddedBackend(user_id="ada").upload("t-1", tmp_path))
