"""Deferred MCP tools: hidden until tool_search, promotions kept in thread state across
turns, and a routing hint promoting a tool for the message that mentions it."""

import asyncio
import uuid

from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from harness.agents.lead_agent import make_lead_agent
from harness.config import parse_config
from harness.testing import ScriptedChatModel, call, tool_reply
from tests.harness.mcp.conftest import BASE, stdio_server

MCP_NAMES = {"add", "env_report", "where", "echo_path", "hang"}


async def test_tools_stay_hidden_until_searched_and_promotions_survive_the_next_turn(ext):
    ext.write({"calc": stdio_server(tools={"where": {"routing": {"mode": "prefer", "keywords": ["working directory"]}}})})
    app = parse_config(BASE + "tool_search:\n  enabled: true\n")
    model = ScriptedChatModel(script=[
        tool_reply(call("tool_search", query="select:add")),
        tool_reply(call("add", a=1, b=2)),
        "three",
        "second turn answer",
        "routed answer",
    ])
    checkpointer = InMemorySaver()
    graph = await asyncio.to_thread(make_lead_agent, {"configurable": {"llm_retry_initial_delay": 0}}, model=model,
                                    app_config=app, checkpointer=checkpointer)
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}", "user_id": "tester"}}
    state = await graph.ainvoke({"messages": [{"role": "user", "content": "add one and two"}]}, config)

    first, second = model.requests[0].tools, model.requests[1].tools
    assert "tool_search" in first and not MCP_NAMES & set(first)
    assert "add" in second and not (MCP_NAMES - {"add"}) & set(second)
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert '"name": "add"' in results[0].content and results[1].content == "sum=3"
    assert state["promoted"] == ["add"]

    # a new turn on the same thread (from the checkpoint): add is still shown
    await graph.ainvoke({"messages": [{"role": "user", "content": "again"}]}, config)
    assert "add" in model.requests[3].tools and "where" not in model.requests[3].tools
    # a routing keyword in the message promotes that tool, for the rest of the thread
    await graph.ainvoke({"messages": [{"role": "user", "content": "what is the working directory?"}]}, config)
    assert {"add", "where"} <= set(model.requests[4].tools)
    assert graph.get_state(config).values["promoted"] == ["add", "where"]


async def test_keyword_search_finds_tools_by_description(ext):
    from harness.mcp import get_mcp_tools
    from harness.mcp.deferred import search

    ext.write({"calc": stdio_server()})
    tools = await asyncio.to_thread(get_mcp_tools, app_config=parse_config(BASE))
    assert [t.name for t in search(tools, "environment variable")][:1] == ["env_report"]
    assert [t.name for t in search(tools, "select:where,nope,add")] == ["where", "add"]
    assert search(tools, "zebra") == []


async def test_without_tool_search_every_mcp_tool_is_shown(ext):
    ext.write({"calc": stdio_server()})
    model = ScriptedChatModel(script=["hi"])
    graph = await asyncio.to_thread(make_lead_agent, {"configurable": {}}, model=model, app_config=parse_config(BASE),
                                    checkpointer=InMemorySaver())
    await graph.ainvoke({"messages": [{"role": "user", "content": "x"}]}, {"configurable": {"thread_id": "t-plain"}})
    assert MCP_NAMES <= set(model.requests[0].tools) and "tool_search" not in model.requests[0].tools
