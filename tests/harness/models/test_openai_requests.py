"""A configured OpenAI-SDK model sends the messages langchain_openai built, byte for byte what
the stock client sends, without the SDK's typed walk of them."""

import asyncio
from typing import Literal

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openai import NotGiven, Omit

from harness.config import parse_config
from harness.models import create_chat_model
from harness.models.openai_requests import send_messages_as_built
from harness.testing import LoopbackOpenAIServer, Reply
from tests.harness.models.test_openai_chunks import _config


@tool
def look(detail: Literal["low", "high"], region: str | None = None) -> str:
    """Look at the picture more closely."""
    return "a cat"


HISTORY = [
    SystemMessage("Be brief."),
    HumanMessage("What is in this picture?"),
    AIMessage("", tool_calls=[{"name": "look", "args": {"detail": "high"}, "id": "call-1"}]),
    ToolMessage("a cat on a mat", tool_call_id="call-1"),
    HumanMessage(content=[{"type": "text", "text": "and this one?"},
                          {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]),
]


def _sent(model, server, call) -> list[dict]:
    before = len(server.requests)
    call(model)
    return server.requests[before:]


async def _async_paths(model):
    async for _ in model.astream(HISTORY):
        pass
    await model.ainvoke(HISTORY)


def test_the_request_is_the_stock_clients_on_every_path():
    for use in ("langchain_openai:ChatOpenAI", "harness.models.reasoning:ReasoningChatOpenAI"):
        with LoopbackOpenAIServer([Reply(text="A dog.")], loop=True) as server:
            configured = create_chat_model("m", config=parse_config(_config(server.base_url, use)))
            stock = type(configured)(model="test-model", base_url=server.base_url, api_key="k", max_retries=0, stream_usage=True)
            assert getattr(configured.root_client.chat.completions.create, "_deerflow_messages_as_built", False)
            for call in (lambda m: m.invoke(HISTORY), lambda m: list(m.stream(HISTORY))):
                ours, theirs = _sent(configured, server, call), _sent(stock, server, call)
                assert len(ours) == 1 and ours == theirs
                assert ours[0]["messages"][2]["tool_calls"][0]["function"]["name"] == "look"

            # the async paths on one loop: both models share langchain_openai's cached async client
            before = len(server.requests)

            async def on_one_loop(first, second):
                await _async_paths(first)
                middle = len(server.requests)
                await _async_paths(second)
                return middle

            middle = asyncio.run(on_one_loop(configured, stock))
            assert server.requests[before:middle] == server.requests[middle:] and middle - before == 2
            assert configured.invoke(HISTORY).content == "A dog."
            # with tools bound: their definitions are sent as the stock client sends them
            ours, theirs = (_sent(model.bind_tools([look]), server, lambda m: m.invoke(HISTORY)) for model in (configured, stock))
            assert ours == theirs and ours[0]["tools"][0]["function"]["parameters"]["properties"]["detail"]["enum"] == ["low", "high"]


def test_a_callers_extra_body_is_kept_and_its_own_messages_win():
    with LoopbackOpenAIServer([Reply(text="ok")], loop=True) as server:
        model = ChatOpenAI(model="test-model", base_url=server.base_url, api_key="k", max_retries=0,
                           extra_body={"top_k": 5})
        assert send_messages_as_built(model)
        assert send_messages_as_built(model)  # installing twice wraps once
        model.invoke("hi")
        assert server.requests[-1]["top_k"] == 5
        assert server.requests[-1]["messages"] == [{"role": "user", "content": "hi"}]
        # a caller that puts messages in extra_body itself gets the SDK's plain behaviour
        model.root_client.chat.completions.create(model="test-model", messages=[{"role": "user", "content": "a"}],
                                                  extra_body={"messages": [{"role": "user", "content": "b"}]})
        assert server.requests[-1]["messages"] == [{"role": "user", "content": "b"}]


def test_a_model_without_the_sdk_is_left_alone():
    from harness.testing import ScriptedChatModel

    assert send_messages_as_built(ScriptedChatModel(script=[Reply(text="x")])) is False


def test_the_sdks_typed_walk_is_left_only_what_create_reads(monkeypatch):
    """The walk is what costs: it is handed an empty message list and no model, tools or
    scalar parameters (they go in ``extra_body`` as built), while the request stays the stock one."""
    from openai.resources.chat.completions import completions as sdk

    walked, transform = [], sdk.maybe_transform
    monkeypatch.setattr(sdk, "maybe_transform", lambda data, *a, **k: (walked.append(dict(data)), transform(data, *a, **k))[1])
    with LoopbackOpenAIServer([Reply(text="A dog.")], loop=True) as server:
        configured = create_chat_model("m", config=parse_config(_config(server.base_url, "langchain_openai:ChatOpenAI")))
        stock = ChatOpenAI(model="test-model", base_url=server.base_url, api_key="k", max_retries=0, stream_usage=True)
        for call in (lambda m: m.bind_tools([look]).invoke(HISTORY), lambda m: list(m.bind_tools([look]).stream(HISTORY))):
            ours = _sent(configured, server, call)
            mine, walked[:] = walked[:], []
            theirs = _sent(stock, server, call)
            assert ours == theirs and ours[0]["model"] == "test-model"
            given = {key: value for key, value in mine[0].items() if not isinstance(value, (NotGiven, Omit))}
            assert given["messages"] == [] and not {"model", "tools", "stream_options"} & set(given)
            assert walked[0]["model"] == "test-model"  # the stock client's walk had them all
            walked[:] = []
        assert ours[0]["stream_options"] == {"include_usage": True}
