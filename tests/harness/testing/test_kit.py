"""The test kit behaves like a provider where the agent can tell."""

import asyncio

import openai
import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from harness.testing import (
    LoopbackOpenAIServer,
    Reply,
    ScriptedChatModel,
    ScriptExhaustedError,
    call,
    tool_reply,
)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_scripted_model_streams_text_and_tool_calls_with_usage():
    model = ScriptedChatModel(script=[tool_reply(call("add", a=1, b=2), text="let me add"), "three"])
    bound = model.bind_tools([add])
    chunks = list(bound.stream([HumanMessage("1+2?")]))
    assert len(chunks) > 3  # really streamed in pieces
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    assert total.content == "let me add"
    assert total.tool_calls[0]["name"] == "add" and total.tool_calls[0]["args"] == {"a": 1, "b": 2}
    assert total.usage_metadata["output_tokens"] > 0
    assert model.requests[0].tools == ["add"]
    assert bound.invoke([HumanMessage("again")]).content == "three"
    with pytest.raises(ScriptExhaustedError):
        model.invoke([HumanMessage("more")])


def test_a_looping_benchmark_model_keeps_no_requests_and_reports_the_scripted_usage():
    model = ScriptedChatModel(script=[Reply(text="ok", usage={"input_tokens": 120, "output_tokens": 9})], loop=True, record_requests=False)
    replies = [model.invoke([HumanMessage("question " * n)]) for n in (1, 500)]
    assert [r.usage_metadata["input_tokens"] for r in replies] == [120, 120]
    assert model.requests == []


def test_scripted_model_reports_invalid_json_arguments_like_chatopenai():
    model = ScriptedChatModel(script=[tool_reply(call("add", '{"a": 1, "b":'))])
    msg = model.invoke([HumanMessage("x")])
    assert msg.tool_calls == []
    assert msg.invalid_tool_calls and msg.invalid_tool_calls[0]["name"] == "add"


async def test_loopback_server_streams_tool_call_deltas_and_usage_to_chatopenai():
    script = [tool_reply(call("add", a=20, b=22), usage={"input_tokens": 50, "output_tokens": 7, "cache_read": 30}), "forty-two"]
    with LoopbackOpenAIServer(script) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="k", model="m", max_retries=0, stream_usage=True).bind_tools([add])
        total = None
        n = 0
        async for chunk in model.astream([HumanMessage("20+22?")]):
            total = chunk if total is None else total + chunk
            n += 1
        assert n > 3
        assert total.tool_calls[0]["name"] == "add" and total.tool_calls[0]["args"] == {"a": 20, "b": 22}
        assert total.usage_metadata["input_tokens"] == 50
        assert total.usage_metadata["input_token_details"]["cache_read"] == 30
        msg = await model.ainvoke([HumanMessage("again")])
        assert msg.content == "forty-two"
        assert server.requests[0]["tools"][0]["function"]["name"] == "add"
        assert server.requests[0]["stream"] is True


def test_loopback_server_error_statuses_and_delays():
    with LoopbackOpenAIServer([Reply(status=429, error_message="slow down"), Reply(text="late", delay=2.0), "ok"]) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="k", model="m", max_retries=0, timeout=0.3)
        with pytest.raises(openai.RateLimitError, match="slow down"):
            model.invoke("hi")
        with pytest.raises(openai.APITimeoutError):
            model.invoke("hi")
        assert model.invoke("hi").content == "ok"


def test_loopback_server_says_when_the_script_is_exhausted():
    with LoopbackOpenAIServer([]) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="k", model="m", max_retries=0)
        with pytest.raises(openai.InternalServerError, match="no reply left"):
            model.invoke("hi")


def test_loopback_server_keeps_a_stream_connection_open_until_it_stops():
    # As OpenAI's API: the next request rides the connection of the streamed answer before it.
    async def two(model) -> list[str]:
        return ["".join([c.content async for c in model.astream("hi")]) for _ in range(2)]

    with LoopbackOpenAIServer(["one", "two", "three"]) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="k", model="m", max_retries=0, timeout=30)
        assert asyncio.run(two(model)) == ["one", "two"]
        assert len(server.request_peers) == 2 and len(set(server.request_peers)) == 1
        kept = ChatOpenAI(base_url=server.base_url, api_key="k", model="m", max_retries=0, timeout=31)
        assert kept.invoke("hi").content == "three"
    # Stopped, it answers nothing more, not even on the connection the client kept.
    with pytest.raises(openai.APIConnectionError):
        kept.invoke("hi")
    assert len(server.request_peers) == 3
