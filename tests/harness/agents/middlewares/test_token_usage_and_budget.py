"""Usage is counted per model with cache reads; a per-run budget stops the run."""

from langchain_core.tools import tool

from harness.testing import Reply, call, tool_reply


@tool
def step() -> str:
    """One step."""
    return "ok"


async def test_usage_per_model_with_cache_reads(agent_factory):
    h = agent_factory([tool_reply(call("step"), usage={"input_tokens": 100, "output_tokens": 10, "cache_read": 80}),
                       Reply(text="done", usage={"input_tokens": 120, "output_tokens": 5})])
    await h.send("go")
    usage = h.state()["token_usage"]["test-model"]
    assert usage == {"input_tokens": 220, "output_tokens": 15, "total_tokens": 235, "cache_read": 80, "calls": 2}
    ai = [m for m in h.state()["messages"] if m.type == "ai"]
    assert all(m.response_metadata["deerflow_model"] == "test-model" for m in ai)


async def test_token_budget_ends_the_run(agent_factory):
    script = [tool_reply(call("step"), usage={"input_tokens": 600, "output_tokens": 10}) for _ in range(2)]
    h = agent_factory(script, tools=[step], configurable={"token_budget": 1000})
    result = await h.send("go forever")
    assert "token budget" in result["messages"][-1].content
    assert h.state()["stop_reason"] == "token_budget_exhausted"
    assert len(h.model.requests) == 2
    # the next run has a fresh budget
    h.model.add("fresh")
    assert (await h.send("next"))["messages"][-1].content == "fresh"


def test_a_runs_tokens_are_its_own_replies_after_the_earlier_runs():
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from harness.agents.middlewares.token_budget import run_tokens

    def reply(run, tokens, **extra):
        return AIMessage("", response_metadata={"deerflow_run_id": run} if run else {},
                         usage_metadata={"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens}, **extra)

    history = [HumanMessage("first"), reply("r1", 500), HumanMessage("second"),
               reply("r2", 100, tool_calls=[{"name": "step", "args": {}, "id": "c1"}]), ToolMessage("ok", tool_call_id="c1"),
               reply(None, 70), reply("r2", 50)]
    assert run_tokens(history, "r2") == 150
    assert run_tokens(history[:2], "r1") == 500
