"""A tool whose results stop carrying anything new: a hint to the model, then the tool is blocked."""

from langchain_core.tools import tool

from harness.testing import call, tool_reply
from tests.harness.agents.conftest import app_config

CALLS = []
PAGE = " ".join(f"word{i}" for i in range(40))


@tool
def search(q: str) -> str:
    """Search the web."""
    CALLS.append(q)
    return f"Results for everything: {PAGE}"


@tool
def fetch(url: str) -> str:
    """Fetch a page."""
    CALLS.append(url)
    raise ConnectionError("connection refused")


@tool
def lookup(key: str) -> str:
    """Look up a fact."""
    return f"{key} is a fact about {key}"


ON = "tool_progress:\n  enabled: true\n"


async def test_repeated_near_duplicate_results_earn_a_hint_but_no_block(agent_factory):
    CALLS.clear()
    script = [tool_reply(call("search", q=f"query {i}")) for i in range(5)] + ["summary"]
    h = agent_factory(script, tools=[search], app=app_config(ON))
    result = await h.send("research")
    assert result["messages"][-1].content == "summary" and len(CALLS) == 5  # recoverable: never blocked
    hints = [i for i, r in enumerate(h.model.requests) if "keeps returning the same content" in r.messages[-1].content]
    # results 2, 3, 4 are duplicates of the first: the third problem (result 4) earns the hint
    assert hints[0] == 4


async def test_a_failing_service_is_blocked_after_the_warning_and_others_go_on(agent_factory):
    CALLS.clear()
    script = [tool_reply(call("fetch", url=f"https://x/{i}")) for i in range(6)] + [tool_reply(call("lookup", key="k")), "done"]
    h = agent_factory(script, tools=[fetch, lookup], app=app_config(ON))
    result = await h.send("fetch")
    tools = [m for m in result["messages"] if m.type == "tool"]
    assert len(CALLS) == 5  # 3 → warned, 2 more → blocked; the sixth call never ran
    assert "blocked" in tools[5].content and tools[5].status == "error"
    assert "keeps failing to reach its service" in h.model.requests[3].messages[-1].content
    assert tools[6].content == "k is a fact about k"  # only that tool is blocked


async def test_off_by_default_and_varied_results_never_warn(agent_factory):
    CALLS.clear()
    script = [tool_reply(call("fetch", url=f"https://x/{i}")) for i in range(6)] + ["done"]
    h = agent_factory(script, tools=[fetch])
    await h.send("fetch")
    assert len(CALLS) == 6
    script = [tool_reply(call("lookup", key=f"key{i}")) for i in range(5)] + ["done"]
    h = agent_factory(script, tools=[lookup], app=app_config(ON))
    await h.send("look")
    assert not any("<deerflow-context kind=\"progress\">" in m.content for r in h.model.requests for m in r.messages if m.type == "human")


async def test_a_new_run_starts_with_the_tool_unblocked(agent_factory):
    CALLS.clear()
    app = app_config(ON + "  stagnation_threshold: 1\n  warn_escalation_count: 1\n")
    script = [tool_reply(call("fetch", url="a")), tool_reply(call("fetch", url="b")), tool_reply(call("fetch", url="c")), "done",
              tool_reply(call("fetch", url="d")), "again"]
    h = agent_factory(script, tools=[fetch], app=app)
    await h.send("fetch")
    assert CALLS == ["a", "b"]
    await h.send("try again")
    assert CALLS == ["a", "b", "d"]
