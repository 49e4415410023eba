"""Summarization moves old messages into summary_text, keeps tool pairs, and the agent still answers."""

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from harness.testing import Reply, call, tool_reply

from ..conftest import app_config

SUMMARY_CFG = """
summarization:
  enabled: true
  trigger:
    - {type: messages, value: 8}
  keep: {type: messages, value: 3}
"""


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def _is_summary_request(messages):
    return "compress a conversation" in str(messages[-1].content) if messages else False


async def test_summary_keeps_tool_pairs_and_still_answers(agent_factory):
    def step(messages):
        if _is_summary_request(messages):
            return "User asked for lookups of a, b and c; all returned values."
        last = messages[-1]
        n = sum(1 for m in messages if isinstance(m, ToolMessage))
        if last.type == "tool" and n < 3:
            return tool_reply(call("lookup", key="bcd"[n]))
        if last.type == "human" and "lookup" in str(last.content):
            return tool_reply(call("lookup", key="a"))
        return Reply(text=f"final answer after {n} lookups")

    h = agent_factory([step] * 12, tools=[lookup], app=app_config(SUMMARY_CFG))
    await h.send("please lookup a")
    result = await h.send("now lookup again")
    state = h.state()
    assert state["summary_text"].startswith("User asked for lookups")
    assert result["messages"][-1].content.startswith("final answer")
    msgs = state["messages"]
    assert len(msgs) < 12
    # every kept tool result still has its call in the kept messages
    call_ids = {tc["id"] for m in msgs if isinstance(m, AIMessage) for tc in m.tool_calls}
    assert all(m.tool_call_id in call_ids for m in msgs if isinstance(m, ToolMessage))
    # the summary reaches the model as context, not as a stored message
    last_req = [r for r in h.model.requests if not _is_summary_request(r.messages)][-1]
    assert "User asked for lookups" in last_req.messages[1].content
    assert not any("User asked for lookups" in str(m.content) for m in msgs)
