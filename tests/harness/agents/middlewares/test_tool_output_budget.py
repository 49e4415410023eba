"""A long tool result goes to a file the agent can read; the model sees head, tail and the path."""

import re

from langchain_core.tools import tool

from harness.agents.middlewares.tool_output_budget import cap_text
from harness.testing import call, tool_reply
from harness.tools.sandbox_tools import get_sandbox_tools
from tests.harness.agents.conftest import app_config

BIG = "HEAD\n" + "\n".join(f"line {i}" for i in range(20_000)) + "\nTAIL"


@tool
def dump() -> str:
    """Print a huge log."""
    return BIG


@tool
def small() -> str:
    """Print a little."""
    return "x" * 5000


def _path(text):
    return re.search(r"saved in full at (\S+?):", text).group(1)


async def test_a_long_result_is_saved_and_read_file_reads_it_back(agent_factory):
    def read_back(messages):
        saved = _path(messages[-1].content)
        return tool_reply(call("read_file", description="read", path=saved, start_line=20_001, end_line=20_002))

    h = agent_factory([tool_reply(call("dump")), read_back, "done"], tools=[dump, *get_sandbox_tools()])
    result = await h.send("dump it")
    preview, read = [m for m in result["messages"] if m.type == "tool"]
    assert len(preview.content) < 4000 and preview.content.count("HEAD") == 1 and preview.content.endswith("TAIL")
    saved = _path(preview.content)
    assert saved.startswith("/mnt/user-data/outputs/.tool-results/dump-")
    files = list((h.outputs / ".tool-results").iterdir())
    assert len(files) == 1 and files[0].read_text() == BIG
    assert "line 19999" in read.content and "TAIL" in read.content  # the agent's read_file reaches the saved file
    assert read.status != "error"


async def test_short_results_and_exempt_tools_pass_untouched(agent_factory):
    h = agent_factory([tool_reply(call("small")), "done"], tools=[small])
    result = await h.send("go")
    assert [m.content for m in result["messages"] if m.type == "tool"] == ["x" * 5000]
    assert not (h.outputs / ".tool-results").exists()


async def test_config_keys_shape_the_budget(agent_factory):
    app = app_config("tool_output:\n  externalize_min_chars: 100\n  preview_head_chars: 10\n  preview_tail_chars: 0\n"
                     "  storage_subdir: big\n  tool_overrides:\n    dump: 0\n")
    h = agent_factory([tool_reply(call("small"), call("dump")), "done"], tools=[small, dump], app=app)
    result = await h.send("go")
    small_msg, dump_msg = [m for m in result["messages"] if m.type == "tool"]
    assert _path(small_msg.content).startswith("/mnt/user-data/outputs/big/small-") and small_msg.content.endswith("\n\n" + "x" * 10)
    # dump's override turns saving off: over fallback_max_chars (30000) it is cut to head + tail instead
    assert "characters omitted" in dump_msg.content and len(dump_msg.content) < 11_200
    assert [p.name.split("-")[0] for p in (h.outputs / "big").iterdir()] == ["small"]


async def test_enabled_false_leaves_results_alone(agent_factory):
    app = app_config("tool_output:\n  enabled: false\n")
    h = agent_factory([tool_reply(call("dump")), "done"], tools=[dump], app=app)
    result = await h.send("go")
    assert [m.content for m in result["messages"] if m.type == "tool"] == [BIG]


async def test_the_run_option_caps_results_that_cannot_be_saved(agent_factory):
    app = app_config("tool_output:\n  externalize_min_chars: 0\n")  # DeerFlow's "never save": only the cap applies
    h = agent_factory([tool_reply(call("dump")), "done"], tools=[dump], app=app, configurable={"max_tool_output_chars": 3000})
    result = await h.send("dump it")
    msg = [m for m in result["messages"] if m.type == "tool"][0]
    assert len(msg.content) < 3200 and msg.content.startswith("HEAD") and msg.content.endswith("TAIL")
    assert "characters omitted" in msg.content


def test_short_text_untouched():
    assert cap_text("short", 100) == "short"
