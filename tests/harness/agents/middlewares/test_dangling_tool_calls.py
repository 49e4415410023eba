"""Unanswered and malformed tool calls never reach the provider as-is."""

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from harness.agents.markers import TOOL_META_KEY
from harness.agents.middlewares.dangling_tool_calls import PLACEHOLDER, repair_request_messages
from harness.testing import call, tool_reply


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return f"echo: {text}"


async def test_dangling_tool_call_is_repaired_on_the_next_turn(agent_factory):
    h = agent_factory(["answer after repair"], tools=[echo])
    # a previous run died after the model asked for a tool: the call has no result
    await h.graph.aupdate_state(h.config(), {"messages": [HumanMessage("start"), AIMessage("", tool_calls=[{"name": "echo", "args": {"text": "x"}, "id": "call_lost"}])]})
    result = await h.send("are you there?")
    assert result["messages"][-1].content == "answer after repair"
    sent = h.model.requests[0].messages
    idx = next(i for i, m in enumerate(sent) if isinstance(m, AIMessage) and m.tool_calls)
    assert isinstance(sent[idx + 1], ToolMessage) and sent[idx + 1].tool_call_id == "call_lost"
    assert sent[idx + 1].content == PLACEHOLDER
    assert sent[idx + 2].type == "human"


async def test_invalid_json_arguments_become_a_recoverable_tool_error(agent_factory):
    h = agent_factory([tool_reply(call("echo", '{"text": "unterminated')), tool_reply(call("echo", text="fixed")), "done"], tools=[echo])
    result = await h.send("echo something")
    tools = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert tools[0].status == "error" and "not valid JSON" in tools[0].content
    assert tools[0].additional_kwargs[TOOL_META_KEY]["recoverable_by_model"] is True
    assert tools[1].content == "echo: fixed"
    assert result["messages"][-1].content == "done"


def test_request_repair_renames_bad_names_fixes_args_and_drops_orphans():
    msgs = [
        HumanMessage("hi"),
        ToolMessage("orphan", tool_call_id="gone"),
        AIMessage("", tool_calls=[{"name": "bad name!", "args": {}, "id": "c1"}]),
        HumanMessage("later"),
    ]
    out = repair_request_messages(msgs)
    assert [m.type for m in out] == ["human", "ai", "tool", "human"]
    assert out[1].tool_calls[0]["name"] == "bad_name_"
    assert out[2].tool_call_id == "c1"


def test_request_repair_places_each_placeholder_after_its_calls_results():
    msgs = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[{"name": "a", "args": {}, "id": "c1"}, {"name": "b", "args": {}, "id": "c2"}]),
        ToolMessage("b done", tool_call_id="c2"),
        AIMessage("", tool_calls=[{"name": "c", "args": {}, "id": "c3"}]),
        ToolMessage("late orphan", tool_call_id="c9"),
        AIMessage("", tool_calls=[{"name": "d", "args": {}, "id": "c4"}]),
    ]
    out = repair_request_messages(msgs)
    assert [(m.type, getattr(m, "tool_call_id", None), m.content) for m in out] == [
        ("human", None, "go"),
        ("ai", None, ""), ("tool", "c2", "b done"), ("tool", "c1", PLACEHOLDER),
        ("ai", None, ""), ("tool", "c3", PLACEHOLDER),
        ("ai", None, ""), ("tool", "c4", PLACEHOLDER),
    ]
    assert out[1] is msgs[1]  # well-formed messages go to the provider as they are
    assert repair_request_messages(out[:3] + [ToolMessage("a done", tool_call_id="c1")]) == out[:3] + [ToolMessage("a done", tool_call_id="c1")]
