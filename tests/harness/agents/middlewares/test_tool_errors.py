"""Tool exceptions become error results with metadata, and the run goes on."""

from langchain_core.tools import tool

from harness.agents.markers import TOOL_META_KEY
from harness.testing import call, tool_reply


@tool
def open_missing(path: str) -> str:
    """Open a file."""
    raise FileNotFoundError(f"no such file: {path}")


@tool
def broken() -> str:
    """An integration that is down."""
    raise RuntimeError("backend exploded")


async def test_exceptions_and_unknown_tools_become_structured_errors(agent_factory):
    h = agent_factory([tool_reply(call("open_missing", path="/x"), call("broken"), call("no_such_tool")), "I could not do it."],
                      tools=[open_missing, broken])
    result = await h.send("try")
    by_name = {m.name: m for m in result["messages"] if m.type == "tool"}
    missing = by_name["open_missing"].additional_kwargs[TOOL_META_KEY]
    assert by_name["open_missing"].status == "error" and "no such file: /x" in by_name["open_missing"].content
    assert missing["error_type"] == "not_found" and missing["recoverable_by_model"] is True
    internal = by_name["broken"].additional_kwargs[TOOL_META_KEY]
    assert internal["error_type"] == "internal" and internal["recoverable_by_model"] is False
    assert by_name["no_such_tool"].additional_kwargs[TOOL_META_KEY]["error_type"] == "unknown_tool"
    assert result["messages"][-1].content == "I could not do it."
