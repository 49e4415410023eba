"""A reply the provider stopped for safety reasons runs none of its tool calls and says why."""

import pytest
from langchain_core.tools import tool

from harness.config import ConfigError
from harness.testing import Reply, call, tool_reply
from tests.harness.agents.conftest import app_config

RAN = []


@tool
def write_report(text: str) -> str:
    """Write the report."""
    RAN.append(text)
    return "written"


async def test_a_content_filtered_reply_runs_no_tool_calls_and_says_why(agent_factory):
    RAN.clear()
    h = agent_factory([tool_reply(call("write_report", text="half a sent"), finish_reason="content_filter")], tools=[write_report])
    result = await h.send("write it")
    final = result["messages"][-1]
    assert final.type == "ai" and final.tool_calls == [] and RAN == []
    assert "safety reasons" in final.content and "write_report" in final.content
    assert final.additional_kwargs["safety_termination"]["suppressed_tool_call_names"] == ["write_report"]
    assert h.state()["stop_reason"] == "safety_capped"
    assert len(h.model.requests) == 1  # no retry of a filtered reply


async def test_an_empty_filtered_reply_gets_an_explanation_and_a_normal_one_passes(agent_factory):
    h = agent_factory([Reply(text="", finish_reason="content_filter")])
    result = await h.send("hi")
    assert "returned no content" in result["messages"][-1].content and h.state()["stop_reason"] == "safety_capped"
    RAN.clear()
    h = agent_factory([tool_reply(call("write_report", text="all of it")), "done"], tools=[write_report])
    assert (await h.send("write it"))["messages"][-1].content == "done" and RAN == ["all of it"]
    assert h.state().get("stop_reason") is None


async def test_a_filtered_reply_with_text_and_no_calls_is_kept(agent_factory):
    h = agent_factory([Reply(text="Here is part of the answer", finish_reason="content_filter")])
    result = await h.send("hi")
    assert result["messages"][-1].content == "Here is part of the answer"


async def test_configured_detectors_replace_the_built_in_ones(agent_factory):
    RAN.clear()
    app = app_config("safety_finish_reason:\n  detectors:\n"
                     "    - use: deerflow.agents.middlewares.safety_termination_detectors:OpenAICompatibleContentFilterDetector\n"
                     "      config:\n        finish_reasons: [sensitive]\n")
    h = agent_factory([tool_reply(call("write_report", text="x"), finish_reason="sensitive")], tools=[write_report], app=app)
    assert "safety reasons" in (await h.send("go"))["messages"][-1].content and RAN == []
    h = agent_factory([tool_reply(call("write_report", text="y"), finish_reason="content_filter"), "done"], tools=[write_report], app=app)
    await h.send("go")
    assert RAN == ["y"]  # content_filter is no longer in the list


async def test_disabled_the_filtered_calls_run(agent_factory):
    RAN.clear()
    h = agent_factory([tool_reply(call("write_report", text="z"), finish_reason="content_filter"), "done"], tools=[write_report],
                      app=app_config("safety_finish_reason:\n  enabled: false\n"))
    await h.send("go")
    assert RAN == ["z"]


@pytest.mark.parametrize("text, field", [
    ("safety_finish_reason:\n  detectors: []\n", "safety_finish_reason.detectors"),
    ("safety_finish_reason:\n  detectors:\n    - use: not a path\n", "safety_finish_reason.detectors"),
    ("safety_finish_reason:\n  detectors:\n    - use: deerflow.agents.middlewares.safety_termination_detectors:Nope\n",
     "safety_finish_reason.detectors[0].use"),
])
def test_bad_detector_config_names_the_key(text, field):
    with pytest.raises(ConfigError) as err:
        app_config(text)
    assert err.value.field.startswith(field)
