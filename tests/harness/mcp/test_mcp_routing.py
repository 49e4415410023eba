"""DeerFlow's MCP routing (``routing: {mode: prefer, priority, keywords}``): the hint reaches
the model's system prompt, and with tool_search on, the deferred tools a message names are
promoted, at most ``tool_search.auto_promote_top_k`` of them, highest priority first."""

import asyncio
import uuid

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from harness.agents.lead_agent import make_lead_agent
from harness.config import ConfigError, parse_config
from harness.testing import ScriptedChatModel
from tests.harness.mcp.conftest import BASE, stdio_server


def _calc(**routing):
    # Server-wide prefer on "numbers", the per-tool entries override only what they set.
    return stdio_server(routing={"mode": "prefer", "priority": 10, "keywords": ["numbers"], **routing},
                        tools={"add": {"routing": {"priority": 90, "keywords": ["sum", "numbers"]}},
                               "where": {"routing": {"priority": 50, "keywords": ["folder"]}},
                               "hang": {"routing": {"mode": "off"}}})


async def _run(app, text: str, *, thread: str | None = None, graph=None, model=None):
    model = model or ScriptedChatModel(script=["ok"] * 4)
    graph = graph or await asyncio.to_thread(make_lead_agent, {"configurable": {}}, model=model, app_config=app,
                                             checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": thread or f"t-{uuid.uuid4().hex[:8]}", "user_id": "tester"}}
    state = await graph.ainvoke({"messages": [{"role": "user", "content": text}]}, config)
    return model, graph, state


async def test_prefer_hints_reach_the_model_and_say_which_tool(ext):
    ext.write({"calc": _calc()})
    model, _, _ = await _run(parse_config(BASE), "hello")
    system = model.requests[0].system_text
    assert "## Preferred MCP tools" in system
    lines = [line for line in system.splitlines() if line.startswith("- A request about")]
    # highest priority first; "hang" is off; tools without their own keywords keep the server's
    assert lines[0] == '- A request about "sum" or "numbers": prefer `add`.'
    assert lines[1] == '- A request about "folder": prefer `where`.'
    assert '"numbers": prefer `echo_path`' in system and "`hang`" not in system.split("## Preferred MCP tools")[1].split("##")[0]
    # every MCP tool is shown (no tool_search): nothing to load first
    assert "tool_search" not in system.split("## Preferred MCP tools")[1]


async def test_no_hint_without_prefer(ext):
    ext.write({"calc": stdio_server(routing={"keywords": ["numbers"]})})  # mode defaults to off, as in DeerFlow
    model, _, _ = await _run(parse_config(BASE), "hello")
    assert "Preferred MCP tools" not in model.requests[0].system_text
    assert "add" in model.requests[0].tools


async def test_with_tool_search_the_hint_says_load_first_and_matching_tools_are_promoted(ext):
    ext.write({"calc": _calc()})
    app = parse_config(BASE + "tool_search:\n  enabled: true\n  auto_promote_top_k: 2\n")
    model = ScriptedChatModel(script=["ok", "ok", "ok"])
    _, graph, state = await _run(app, "hello there", model=model, thread="t-route")
    assert "load `add` with `tool_search`, then prefer it" in model.requests[0].system_text
    assert not {"add", "where", "echo_path"} & set(model.requests[0].tools)
    assert not state.get("promoted")

    # "numbers" matches add (90), echo_path/env_report (10, server-wide), "folder" where (50):
    # the top two by priority are promoted before the call and shown to the model
    _, _, state = await _run(app, "Sum these NUMBERS in my folder", graph=graph, model=model, thread="t-route")
    assert {"add", "where"} <= set(model.requests[1].tools)
    assert not {"echo_path", "env_report", "hang"} & set(model.requests[1].tools)
    assert state["promoted"] == ["add", "where"]

    # the promotion stays for the rest of the thread
    _, _, state = await _run(app, "thanks", graph=graph, model=model, thread="t-route")
    assert {"add", "where"} <= set(model.requests[2].tools)


async def test_top_k_one_promotes_only_the_highest_priority(ext):
    ext.write({"calc": _calc()})
    app = parse_config(BASE + "tool_search:\n  enabled: true\n  auto_promote_top_k: 1\n")
    model, _, state = await _run(app, "numbers in a folder")
    assert state["promoted"] == ["add"] and "where" not in model.requests[0].tools


@pytest.mark.parametrize("value", [0, 6])
def test_auto_promote_top_k_out_of_range_is_refused(value):
    with pytest.raises(ConfigError, match=r"tool_search\.auto_promote_top_k") as err:
        parse_config(BASE + f"tool_search:\n  enabled: true\n  auto_promote_top_k: {value}\n")
    assert ("greater than or equal to 1" if value == 0 else "less than or equal to 5") in str(err.value)


def test_a_bad_tool_routing_names_the_tool():
    from harness.config.extensions import parse_extensions

    with pytest.raises(ConfigError, match=r"mcpServers.calc.tools.*add.routing.mode"):
        parse_extensions('{"mcpServers": {"calc": {"command": "x", "tools": {"add": {"routing": {"mode": "always"}}}}}}')
