"""Configured OpenAI-SDK models stream chunks as dicts, and their answers are the same."""

import asyncio

import pytest
from langchain_openai import ChatOpenAI

from harness.config import parse_config
from harness.models import create_chat_model
from harness.models.openai_chunks import _as_dict, stream_chunks_as_dicts
from harness.testing import LoopbackOpenAIServer, Reply, call, tool_reply


def _config(base_url: str, use: str = "langchain_openai:ChatOpenAI") -> str:
    return f"""
models:
  - name: m
    use: {use}
    model: test-model
    base_url: {base_url}
    api_key: k
    max_retries: 0
"""


def _aggregate(model, prompt: str):
    return asyncio.run(_aggregate_each(model, prompt))[0]


async def _aggregate_each(model, *prompts: str) -> list:
    out = []
    for prompt in prompts:
        total = None
        async for chunk in model.astream(prompt):
            total = chunk if total is None else total + chunk
        out.append(total)
    return out


def _comparable(message) -> dict:
    dumped = message.model_dump()
    dumped.pop("id")  # each answer has its own completion id
    for item in dumped["tool_calls"] + dumped["tool_call_chunks"]:
        item.pop("id", None)
    return dumped


SCRIPT = [Reply(text="Paris is the capital of France.", usage={"input_tokens": 12, "output_tokens": 7, "cache_read": 4}),
          tool_reply(call("web_search", query="weather in Paris"), text="Let me look.")]


@pytest.mark.parametrize("use", ["langchain_openai:ChatOpenAI", "harness.models.reasoning:ReasoningChatOpenAI"])
def test_a_configured_model_streams_what_the_stock_client_streams(use):
    with LoopbackOpenAIServer(SCRIPT * 2) as server:
        configured = create_chat_model("m", config=parse_config(_config(server.base_url, use)))
        stock = type(configured)(model="test-model", base_url=server.base_url, api_key="k", max_retries=0, stream_usage=True)
        ours = [_aggregate(configured, "capital?"), _aggregate(configured, "weather?")]
        # The stock client's shared connections belong to the loop that opened them: its calls on one loop
        theirs = asyncio.run(_aggregate_each(stock, "capital?", "weather?"))
    assert ours[0].content == "Paris is the capital of France."
    assert ours[0].usage_metadata["input_tokens"] == 12 and ours[0].usage_metadata["output_tokens"] == 7
    assert [c["name"] for c in ours[1].tool_calls] == ["web_search"] and ours[1].tool_calls[0]["args"] == {"query": "weather in Paris"}
    assert [_comparable(m) for m in ours] == [_comparable(m) for m in theirs]


def test_the_sdk_hands_langchain_the_parsed_json():
    seen = []

    class Recording(ChatOpenAI):
        def _convert_chunk_to_generation_chunk(self, chunk, default_chunk_class, base_generation_info):
            seen.append(type(chunk))
            return super()._convert_chunk_to_generation_chunk(chunk, default_chunk_class, base_generation_info)

    with LoopbackOpenAIServer([Reply(text="hello there")] * 2) as server:
        model = Recording(model="test-model", base_url=server.base_url, api_key="k", max_retries=0)
        assert stream_chunks_as_dicts(model)
        assert stream_chunks_as_dicts(model)  # installing twice wraps once
        assert _aggregate(model, "hi").content == "hello there"
        # the non-streamed path still gets the SDK's typed completion
        assert model.invoke("hi").content == "hello there"
    assert seen and set(seen) == {dict}


def test_a_choice_without_a_delta_reads_as_the_typed_chunk_would():
    chunk = _as_dict({"id": "c", "choices": [{"index": 0, "finish_reason": "stop"}]})
    assert chunk["choices"][0]["delta"] is None


def test_a_model_without_an_openai_client_is_left_alone():
    from harness.testing import ScriptedChatModel

    assert stream_chunks_as_dicts(ScriptedChatModel(script=["x"])) is False
