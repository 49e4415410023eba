"""DeerFlowClient: event stream shape, multi-turn threads, clarification, model listing."""

import pytest
from langchain_core.tools import tool

from harness.client import DeerFlowClient
from harness.config import parse_config
from harness.testing import Reply, ScriptedChatModel, call, tool_reply
from harness.tools.builtins import get_builtin_tools

CONFIG = """
models:
  - {name: main, display_name: Main, use: 'langchain_openai:ChatOpenAI', model: m, base_url: 'http://127.0.0.1:9/v1', api_key: k, supports_vision: true}
  - {name: other, use: 'langchain_openai:ChatOpenAI', model: o, api_key: $DEERFLOW_TEST_NOT_SET_KEY}
"""


@tool
def lookup(key: str) -> str:
    """Look up a key."""
    return f"value:{key}"


@pytest.fixture
def app(monkeypatch):
    monkeypatch.delenv("DEERFLOW_TEST_NOT_SET_KEY", raising=False)
    return parse_config(CONFIG)


def test_stream_event_sequence(app):
    model = ScriptedChatModel(script=[
        tool_reply(call("lookup", key="a"), text="Checking.", usage={"input_tokens": 100, "output_tokens": 10, "cache_read": 60}),
        Reply(text="The value of a is value:a, as requested.", usage={"input_tokens": 130, "output_tokens": 12}, chunk_size=4),
    ])
    client = DeerFlowClient(model=model, tools=[lookup], app_config=app, llm_retry_initial_delay=0)
    events = list(client.stream("what is a?", thread_id="t-stream"))
    kinds = [e.type for e in events]
    assert kinds[0] == "values" and kinds[-1] == "end" and kinds.count("end") == 1
    tuples = [e.data for e in events if e.type == "messages-tuple"]
    deltas = [t for t in tuples if t["type"] == "ai" and "content" in t]
    final_id = deltas[-1]["id"]
    final_text = "".join(t["content"] for t in deltas if t["id"] == final_id)
    assert final_text == "The value of a is value:a, as requested."
    assert sum(1 for t in deltas if t["id"] == final_id) > 3  # really streamed as deltas
    calls = [t for t in tuples if "tool_calls" in t]
    results = [t for t in tuples if t["type"] == "tool"]
    assert len(calls) == 1 and calls[0]["tool_calls"][0]["name"] == "lookup"
    assert len(results) == 1 and results[0]["content"] == "value:a"
    last_values = [e.data for e in events if e.type == "values"][-1]
    assert last_values["messages"][-1]["content"] == final_text and last_values["title"] == "what is a?"
    end = events[-1].data
    assert end["usage"] == {"input_tokens": 230, "output_tokens": 22, "total_tokens": 252, "cache_read": 60}
    assert end["thread_id"] == "t-stream" and end["interrupts"] == []


def test_chat_multi_turn_keeps_the_thread(app):
    model = ScriptedChatModel(script=["Nice to meet you, Ada.", lambda msgs: "Your name is Ada." if any("Ada" in str(m.content) for m in msgs) else "No idea."])
    client = DeerFlowClient(model=model, tools=[], app_config=app)
    assert client.chat("I am Ada", thread_id="t-multi") == "Nice to meet you, Ada."
    assert client.chat("What is my name?", thread_id="t-multi") == "Your name is Ada."
    assert len(client.get_state("t-multi")["messages"]) == 4


def test_clarification_through_the_client(app):
    model = ScriptedChatModel(script=[tool_reply(call("ask_clarification", question="Which city?")), "Booking Paris."])
    client = DeerFlowClient(model=model, tools=get_builtin_tools(), app_config=app)
    assert client.chat("book a trip", thread_id="t-clar") == "Which city?"
    assert client.chat(resume="Paris", thread_id="t-clar") == "Booking Paris."


async def test_async_stream_matches(app):
    model = ScriptedChatModel(script=["hello there"])
    client = DeerFlowClient(model=model, tools=[], app_config=app)
    assert await client.achat("hi", thread_id="t-async") == "hello there"


def test_list_models_and_reset(app):
    client = DeerFlowClient(app_config=app)
    models = client.list_models()["models"]
    assert [m["name"] for m in models] == ["main", "other"]
    assert models[1]["available"] is False
    assert client.get_model("main")["display_name"] == "Main"
    model = ScriptedChatModel(script=["a", "b"])
    client = DeerFlowClient(model=model, tools=[], app_config=app)
    client.chat("x", thread_id="t-r")
    first = client._agent({"llm_retry_initial_delay": 1.0})
    assert client._agent({"llm_retry_initial_delay": 1.0}) is first
    client.reset_agent()
    assert client._agent({"llm_retry_initial_delay": 1.0}) is not first


def test_error_fallback_text_is_delivered_once(app):
    model = ScriptedChatModel(script=[Reply(status=400, error_message="bad")])
    client = DeerFlowClient(model=model, tools=[], app_config=app)
    events = list(client.stream("hi", thread_id="t-fallback"))
    texts = [e.data for e in events if e.type == "messages-tuple" and "content" in e.data]
    assert len(texts) == 1 and "could not finish this reply" in texts[0]["content"]
    assert events[-1].data["stop_reason"] == "error_fallback"


def test_threads_persist_in_a_sqlite_checkpointer(app, tmp_path):
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    db = tmp_path / "checkpoints.sqlite3"
    first = DeerFlowClient(model=ScriptedChatModel(script=["noted"]), tools=[], app_config=app,
                           checkpointer=SqliteSaver(sqlite3.connect(db, check_same_thread=False)))
    first.chat("remember the number 7", thread_id="t-sqlite")
    # a new client (a new process, say) on the same file continues the thread
    model = ScriptedChatModel(script=[lambda msgs: "7" if any("number 7" in str(m.content) for m in msgs) else "?"])
    second = DeerFlowClient(model=model, tools=[], app_config=app,
                            checkpointer=SqliteSaver(sqlite3.connect(db, check_same_thread=False)))
    assert second.chat("which number?", thread_id="t-sqlite") == "7"


def test_title_model_tokens_do_not_leak_into_the_stream(tmp_path):
    from harness.testing import LoopbackOpenAIServer

    with LoopbackOpenAIServer(["Secret Title Words"]) as server:
        app = parse_config(CONFIG.replace("$DEERFLOW_TEST_NOT_SET_KEY", "k").replace("model: o,", f"model: o, base_url: '{server.base_url}', max_retries: 0,")
                           + "title: {model_name: other}\n")
        client = DeerFlowClient(model=ScriptedChatModel(script=["the answer"]), tools=[], app_config=app)
        events = list(client.stream("question", thread_id="t-title"))
        assert len(server.requests) == 1  # the title model was called
        streamed = [e.data for e in events if e.type == "messages-tuple"]
        assert all("Secret" not in str(d.get("content", "")) for d in streamed)
        assert [e.data for e in events if e.type == "values"][-1]["title"] == "Secret Title Words"


def test_custom_events_from_tools_are_forwarded(app):
    from langgraph.config import get_stream_writer

    @tool
    def slow_job(n: int) -> str:
        """Run a job with progress."""
        write = get_stream_writer()
        for i in range(n):
            write({"type": "progress", "step": i + 1, "of": n})
        return "job done"

    model = ScriptedChatModel(script=[tool_reply(call("slow_job", n=3)), "finished"])
    client = DeerFlowClient(model=model, tools=[slow_job], app_config=app)
    events = list(client.stream("run it", thread_id="t-custom"))
    custom = [e.data for e in events if e.type == "custom"]
    assert custom == [{"type": "progress", "step": i, "of": 3} for i in (1, 2, 3)]


def test_reasoning_deltas_are_streamed_separately(app):
    model = ScriptedChatModel(script=[Reply(text="42", reasoning="six times seven")])
    client = DeerFlowClient(model=model, tools=[], app_config=app)
    events = [e.data for e in client.stream("meaning?", thread_id="t-reason") if e.type == "messages-tuple"]
    assert [e["reasoning"] for e in events if "reasoning" in e] == ["six times seven"]
    assert "".join(e["content"] for e in events if "content" in e) == "42"
