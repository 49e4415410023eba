"""Usage is counted per model with cache reads; a per-run budget stops the run."""

from langchain_core.tools import tool

from harness.testing import Reply, call, tool_reply


@tool
def step() -> str:
    """One step."""
    return "ok"


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


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


async def test_the_config_section_warns_at_its_threshold_and_stops_on_output_tokens(agent_factory):
    from tests.harness.agents.conftest import app_config

    app = app_config("token_budget:\n  enabled: true\n  max_tokens: 100000\n  max_output_tokens: 100\n  warn_threshold: 0.5\n")
    script = [tool_reply(call("step"), usage={"input_tokens": 10, "output_tokens": 30}) for _ in range(4)]
    h = agent_factory(script, tools=[step], app=app)
    result = await h.send("go")
    reqs = h.model.requests
    assert len(reqs) == 4  # 120 output tokens after four replies: the fifth call is not made
    warned = ["token budget" in m.content for r in reqs for m in r.messages if m.type == "human" and "budget" in m.content]
    assert "You have used 60 of this run's 100 output token budget" in reqs[2].messages[-1].content and len(warned) == 1
    assert "120 of 100 output tokens" in result["messages"][-1].content and h.state()["stop_reason"] == "token_budget_exhausted"


async def test_the_section_off_means_no_budget(agent_factory):
    from tests.harness.agents.conftest import app_config

    app = app_config("token_budget:\n  enabled: false\n  max_tokens: 1000\n")
    script = [tool_reply(call("step"), usage={"input_tokens": 600, "output_tokens": 10}) for _ in range(2)] + ["done"]
    h = agent_factory(script, tools=[step], app=app)
    assert (await h.send("go"))["messages"][-1].content == "done"


async def test_a_summary_mid_run_does_not_reset_the_runs_token_budget(agent_factory):
    """The replies a summary removes still count: seven replies of 150 tokens pass a budget of
    1000, though the kept window never holds more than four of them."""
    from tests.harness.agents.conftest import app_config

    app = app_config("summarization:\n  enabled: true\n  trigger:\n    - {type: messages, value: 8}\n  keep: {type: messages, value: 3}\n")

    keys = iter(range(100))  # a new key each time: the loop guard stays out of it

    def answer(messages):
        if messages and "compress a conversation" in str(messages[-1].content):
            return "Earlier steps ran."
        return tool_reply(call("lookup", key=str(next(keys))), usage={"input_tokens": 140, "output_tokens": 10})

    h = agent_factory([answer] * 30, tools=[lookup], app=app, configurable={"token_budget": 1000})
    result = await h.send("go forever")
    state = h.state()
    assert state["summary_text"]  # a summary did remove replies mid-run
    assert state["stop_reason"] == "token_budget_exhausted"
    assert "token budget (1050 of 1000 tokens)" in result["messages"][-1].content
