"""Huge tool results are cut to head and tail before they re-enter the context."""

from langchain_core.tools import tool

from harness.agents.middlewares.tool_output_budget import cap_text
from harness.testing import call, tool_reply


@tool
def dump() -> str:
    """Print a huge log."""
    return "HEAD" + "x" * 100_000 + "TAIL"


async def test_tool_result_is_capped(agent_factory):
    h = agent_factory([tool_reply(call("dump")), "done"], tools=[dump], configurable={"max_tool_output_chars": 3000})
    result = await h.send("dump it")
    msg = [m for m in result["messages"] if m.type == "tool"][0]
    assert len(msg.content) < 3200
    assert msg.content.startswith("HEAD") and msg.content.endswith("TAIL")
    assert "characters omitted" in msg.content


def test_short_text_untouched():
    assert cap_text("short", 100) == "short"
