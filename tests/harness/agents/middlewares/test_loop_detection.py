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


@tool
def read_page(n: int) -> str:
    """Read a page."""
    return f"page {n}"


async def test_one_tool_called_too_often_with_varied_arguments_is_stopped_by_its_frequency(agent_factory):
    from tests.harness.agents.conftest import app_config

    app = app_config("loop_detection:\n  tool_freq_warn: 3\n  tool_freq_hard_limit: 4\n")
    script = [tool_reply(call("read_page", n=i)) for i in range(4)] + ["I read four pages."]
    h = agent_factory(script, tools=[read_page], app=app)
    result = await h.send("read everything")
    assert result["messages"][-1].content == "I read four pages." and h.state()["stop_reason"] == "loop_capped"
    reqs = h.model.requests
    assert "you have called `read_page` 3 times" in reqs[3].messages[-1].content
    assert reqs[4].tools == [] and "past its safety limit" in reqs[4].messages[-1].content


async def test_a_per_tool_override_raises_its_limit_and_a_disabled_detector_never_fires(agent_factory):
    from tests.harness.agents.conftest import app_config

    app = app_config("loop_detection:\n  tool_freq_warn: 3\n  tool_freq_hard_limit: 4\n"
                     "  tool_freq_overrides:\n    read_page:\n      warn: 10\n      hard_limit: 20\n")
    script = [tool_reply(call("read_page", n=i)) for i in range(6)] + ["done"]
    h = agent_factory(script, tools=[read_page], app=app)
    assert (await h.send("read"))["messages"][-1].content == "done" and h.state().get("stop_reason") is None
    script = [tool_reply(call("poll", job="42")) for _ in range(7)] + ["gave up"]
    h = agent_factory(script, tools=[poll], app=app_config("loop_detection:\n  enabled: false\n"))
    assert (await h.send("wait"))["messages"][-1].content == "gave up" and h.state().get("stop_reason") is None


async def test_config_thresholds_apply_and_a_new_run_starts_counting_afresh(agent_factory):
    from tests.harness.agents.conftest import app_config

    app = app_config("loop_detection:\n  warn_threshold: 2\n  hard_limit: 2\n")
    h = agent_factory([tool_reply(call("poll", job="1")), tool_reply(call("poll", job="1")), "stopped"], tools=[poll], app=app)
    assert (await h.send("wait"))["messages"][-1].content == "stopped" and h.state()["stop_reason"] == "loop_capped"
    h.model.add(tool_reply(call("poll", job="1")))
    h.model.add("fine")
    assert (await h.send("once more"))["messages"][-1].content == "fine"
    assert h.model.requests[-1].tools != []
