"""Plan mode: write_todos exists only there, with one item in progress at a time."""

from harness.testing import call, tool_reply


async def test_plan_mode_todos(agent_factory):
    bad = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    good = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "pending"}]
    h = agent_factory([tool_reply(call("write_todos", todos=bad)), tool_reply(call("write_todos", todos=good)), "planned"],
                      configurable={"is_plan_mode": True})
    result = await h.send("big task")
    tool_msgs = [m for m in result["messages"] if m.type == "tool"]
    assert tool_msgs[0].status == "error" and "exactly one in_progress" in tool_msgs[0].content
    assert h.state()["todos"] == good
    assert "write_todos" in h.model.requests[0].tools
    assert "## Plan mode" in h.model.requests[0].messages[0].content
    assert [m.type for m in h.model.requests[0].messages].count("system") == 1


async def test_no_todo_tool_outside_plan_mode(agent_factory):
    h = agent_factory(["hi"])
    await h.send("hello")
    assert "write_todos" not in h.model.requests[0].tools
