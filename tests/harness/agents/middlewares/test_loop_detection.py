"""Repeated identical tool calls: a warning, then a hard stop with a final answer."""

from langchain_core.tools import tool

from harness.testing import call, tool_reply


@tool
def poll(job: str) -> str:
    """Check a job."""
    return "still running"


async def test_repeated_calls_warn_then_hard_stop_with_final_answer(agent_factory):
    script = [tool_reply(call("poll", job="42")) for _ in range(5)] + [tool_reply(call("poll", job="42"), text="Job 42 never finished.")]
    h = agent_factory(script, tools=[poll], configurable={"loop_warn_after": 3, "loop_stop_after": 5})
    result = await h.send("wait for job 42")
    final = result["messages"][-1]
    assert final.type == "ai" and final.tool_calls == [] and final.content == "Job 42 never finished."
    assert h.state()["stop_reason"] == "loop_capped"
    reqs = h.model.requests
    assert len(reqs) == 6
    assert "Warning: you have made the same call (`poll`) 3 times" in reqs[3].messages[-1].content
    assert all("Warning" not in m.content for m in reqs[4].messages if m.type == "human")  # warned once per call set
    assert reqs[5].tools == []  # the final call had no tools
    assert "Tools are now disabled" in reqs[5].messages[-1].content


async def test_varied_calls_are_not_a_loop(agent_factory):
    script = [tool_reply(call("poll", job=str(i))) for i in range(6)] + ["all checked"]
    h = agent_factory(script, tools=[poll], configurable={"loop_warn_after": 3, "loop_stop_after": 5})
    result = await h.send("check jobs")
    assert result["messages"][-1].content == "all checked"
    assert h.state().get("stop_reason") is None
