"""Overwriting or editing an existing file requires a read of its current content."""

from harness.agents.markers import TOOL_META_KEY
from harness.testing import call, tool_reply
from harness.tools.sandbox_tools import get_sandbox_tools

P = "/mnt/user-data/workspace/notes.txt"


def w(content):
    return call("write_file", description="write", path=P, content=content)


async def test_read_before_write_gate(agent_factory):
    script = [
        tool_reply(w("v1\n")),                                                        # new file: allowed
        tool_reply(w("v2\n")),                                                        # overwrite unread: refused
        tool_reply(call("read_file", description="read", path=P)),
        tool_reply(call("str_replace", description="edit", path=P, old_str="v1", new_str="v3")),   # allowed
        tool_reply(call("str_replace", description="edit", path=P, old_str="v3", new_str="v4")),   # stale: refused
        "done",
    ]
    h = agent_factory(script, tools=get_sandbox_tools())
    result = await h.send("edit notes")
    tools = [m for m in result["messages"] if m.type == "tool"]
    assert tools[0].status != "error"
    assert tools[1].status == "error" and "have not read it" in tools[1].content
    assert tools[1].additional_kwargs[TOOL_META_KEY]["error_type"] == "read_before_write"
    assert "v1" in tools[2].content and tools[2].additional_kwargs["deerflow_read"]["path"] == P
    assert tools[3].status != "error"
    assert tools[4].status == "error" and "changed since you last read it" in tools[4].content
    workspace = h.state()["thread_data"]["workspace_path"]
    with open(f"{workspace}/notes.txt") as fh:
        assert fh.read() == "v3\n"


async def test_parallel_edits_from_one_read_cannot_both_pass(agent_factory):
    script = [
        tool_reply(w("a\n")),
        tool_reply(call("read_file", description="read", path=P)),
        tool_reply(call("str_replace", description="e1", path=P, old_str="a", new_str="b"),
                   call("str_replace", description="e2", path=P, old_str="a", new_str="c")),
        "done",
    ]
    h = agent_factory(script, tools=get_sandbox_tools())
    result = await h.send("two edits at once")
    edits = [m for m in result["messages"] if m.type == "tool" and m.name == "str_replace"]
    assert sorted(m.status for m in edits) == ["error", "success"]
    assert any("changed since you last read it" in m.content for m in edits)


async def test_the_gate_is_off_with_read_before_write_enabled_false(agent_factory):
    from tests.harness.agents.conftest import app_config

    script = [tool_reply(w("v1\n")), tool_reply(w("v2\n")), "done"]
    h = agent_factory(script, tools=get_sandbox_tools(), app=app_config("read_before_write:\n  enabled: false\n"))
    result = await h.send("write twice")
    assert [m.status for m in result["messages"] if m.type == "tool"] == ["success", "success"]
    assert (h.outputs.parent / "workspace" / "notes.txt").read_text() == "v2\n"
