"""The task tool with the scripted model: delegation, parallelism, caps and stop reasons."""

from __future__ import annotations

from langchain_core.tools import tool

from harness.testing import Reply, call, tool_reply

from tests.support.subagents import looping, same

from .conftest import Barrier, Router, task_call


async def test_three_subagents_run_in_parallel_and_each_returns_one_result(lead_factory):
    barrier = Barrier(3)

    @tool
    async def probe(who: str) -> str:
        """Check in."""
        await barrier.enter(who)
        return f"{who} checked"

    router = Router(
        lead=[tool_reply(task_call("A", "job A"), task_call("B", "job B"), task_call("C", "job C")), "All three are done."],
        subs={k: [tool_reply(call("probe", who=k)), f"result of {k}"] for k in ("job A", "job B", "job C")},
    )
    lead = lead_factory(router, tools=[probe])
    state = await lead.send("do three things")
    results = lead.task_messages(state)
    assert sorted(m.content.split("Result:\n")[1] for m in results) == ["result of job A", "result of job B", "result of job C"]
    assert all(m.additional_kwargs["subagent_status"] == "completed" for m in results)
    # every subagent was inside its tool before any left it: they really overlapped
    assert [kind for kind, _ in barrier.log[:3]] == ["in", "in", "in"]
    assert state["messages"][-1].content == "All three are done."
    ledger = state["delegations"]
    assert len(ledger) == 3 and {d["status"] for d in ledger} == {"completed"}
    kinds = [e["type"] for e in lead.events]
    assert kinds.count("task_started") == 3 and kinds.count("task_completed") == 3
    # the lead's own requests never saw subagent messages
    lead_requests = [r for r in lead.model.requests if "subagent of DeerFlow" not in r.system_text]
    assert all("probe" not in str(m.content) for r in lead_requests for m in r.messages if m.type == "human")


async def test_a_subagents_file_calls_of_one_message_run_in_its_order(lead_factory):
    """A subagent that writes and then reads the same file in one message reads what it wrote."""
    import asyncio

    from harness.tools.file_access import READ, WRITE, declare_thread_files

    files: dict[str, str] = {}
    read_started = asyncio.Event()

    @tool
    async def save(path: str, text: str) -> str:
        """Write a file."""
        # Unordered, the read starts meanwhile and finds nothing; ordered, it never starts
        # before this returns, and the wait simply runs out.
        try:
            await asyncio.wait_for(read_started.wait(), 0.5)
        except asyncio.TimeoutError:
            pass
        files[path] = text
        return "saved"

    @tool
    async def load(path: str) -> str:
        """Read a file."""
        read_started.set()
        return files.get(path, "no such file")

    declare_thread_files(save, WRITE)
    declare_thread_files(load, READ)
    router = Router(lead=[tool_reply(task_call("A", "job A")), "Done."],
                    subs={"job A": [tool_reply(call("save", path="a.txt", text="hello"), call("load", path="a.txt")), "finished"]})
    lead = lead_factory(router, tools=[save, load])
    await lead.send("write and read")
    subagent_requests = [r for r in lead.model.requests if "subagent of DeerFlow" in r.system_text]
    results = [m.content for r in subagent_requests for m in r.messages if m.type == "tool"]
    assert results[-2:] == ["saved", "hello"]


async def test_calls_past_the_concurrency_cap_do_not_run_and_the_model_is_told(lead_factory):
    router = Router(lead=[tool_reply(*[task_call(k, f"job {k}") for k in "ABCD"]), "Summary of what ran."],
                    subs={f"job {k}": [f"result {k}"] for k in "ABCD"})
    lead = lead_factory(router, configurable={"max_concurrent_subagents": 2})
    state = await lead.send("four things")
    results = {m.tool_call_id: m for m in lead.task_messages(state)}
    ran = [m for m in results.values() if m.additional_kwargs.get("subagent_status") == "completed"]
    skipped = [m for m in results.values() if m.additional_kwargs.get("subagent_skipped") == "limit"]
    assert len(ran) == 2 and len(skipped) == 2
    assert all("at most 2 subagents run at once" in m.content for m in skipped)
    # the note reached the model's next request, and only two subagents ever started
    last_lead = [r for r in lead.model.requests if "subagent of DeerFlow" not in r.system_text][-1]
    assert sum("Not run:" in str(m.content) for m in last_lead.messages) == 2
    assert [e["type"] for e in lead.events].count("task_started") == 2


async def test_the_per_run_total_counts_the_ledger_across_responses_and_resets_next_run(lead_factory):
    router = Router(lead=[tool_reply(task_call("A", "job A"), task_call("B", "job B")), tool_reply(task_call("C", "job C")), "Done.",
                          tool_reply(task_call("D", "job D"), task_call("E", "job E")), "Done again."],
                    subs={f"job {k}": [f"result {k}"] for k in "ABCDE"})
    lead = lead_factory(router, configurable={"max_total_subagents": 2})
    state = await lead.send("go")
    messages = lead.task_messages(state)
    assert [m.additional_kwargs.get("subagent_status") for m in messages] == ["completed", "completed", "failed"]
    assert "limit of 2 subagents is reached (2 already ran)" in messages[-1].content
    # a new run has its own budget: the earlier run's delegations stay in the ledger, uncounted
    state = await lead.send("again")
    statuses = [m.additional_kwargs.get("subagent_status") for m in lead.task_messages(state)]
    assert statuses.count("completed") == 4 and len(state["delegations"]) == 4


async def test_turn_cap_ends_with_a_final_answer_without_tools(lead_factory):
    @tool
    def noop(n: int) -> str:
        """Do nothing."""
        return f"noop {n}"

    def sub(messages):
        if "reached your limit" in str(messages[-1].content):
            return "Partial: I looked at two things."
        return tool_reply(call("noop", n=len(messages)))

    router = Router(lead=[tool_reply(task_call("A", "job A")), "ok"], subs={"job A": [sub]})
    lead = lead_factory(router, tools=[noop], extra_yaml="  max_turns: 2\n")
    state = await lead.send("go")
    (msg,) = lead.task_messages(state)
    assert msg.additional_kwargs["subagent_status"] == "completed"
    assert msg.additional_kwargs["subagent_stop_reason"] == "turn_capped"
    assert "Partial: I looked at two things." in msg.content
    end = lead.events[-1]
    assert end["type"] == "task_completed" and end["stop_reason"] == "turn_capped"


async def test_token_cap_and_loop_guard_set_their_stop_reasons(lead_factory):
    router = Router(lead=[tool_reply(task_call("T", "job T"), task_call("L", "job L")), "ok"],
                    subs={"job T": [lambda m: looping(m) if "reached your limit" in str(m[-1].content) else
                                      tool_reply(call("same", q="t"), usage={"input_tokens": 900, "output_tokens": 200})],
                          "job L": [looping]})
    lead = lead_factory(router, tools=[same], extra_yaml="  max_tokens: 1000\n")
    state = await lead.send("go")
    by_prompt = {d["description"]: d for d in state["delegations"]}
    assert by_prompt["T"]["stop_reason"] == "token_capped" and by_prompt["T"]["status"] == "completed"
    assert by_prompt["L"]["stop_reason"] == "loop_capped"


async def test_timeout_marks_the_subagent_timed_out_and_the_lead_goes_on(lead_factory):
    router = Router(lead=[tool_reply(task_call("S", "job S")), "The subagent was too slow."],
                    subs={"job S": [Reply(text="never", delay=30)]})
    lead = lead_factory(router, extra_yaml="  timeout_seconds: 1\n")
    state = await lead.send("go")
    (msg,) = lead.task_messages(state)
    assert msg.additional_kwargs["subagent_status"] == "timed_out" and "within 1s" in msg.content
    assert lead.events[-1]["type"] == "task_timed_out"
    assert state["messages"][-1].content == "The subagent was too slow."


async def test_a_provider_error_fails_only_that_subagent(lead_factory):
    router = Router(lead=[tool_reply(task_call("good", "job good"), task_call("bad", "job bad")), "One worked."],
                    subs={"job good": ["fine"], "job bad": [Reply(status=500, error_message="provider exploded")]})
    lead = lead_factory(router)
    state = await lead.send("go")
    status = {d["description"]: d["status"] for d in state["delegations"]}
    assert status == {"good": "completed", "bad": "failed"}
    failed = [e for e in lead.events if e["type"] == "task_failed"]
    assert len(failed) == 1 and "provider exploded" in failed[0]["error"]
    assert state["messages"][-1].content == "One worked."


async def test_cancelling_the_parent_cancels_its_subagents(lead_factory):
    import asyncio

    inside, cancelled = [], []
    both_in, both_out = asyncio.Event(), asyncio.Event()

    @tool
    async def wait_forever(who: str) -> str:
        """Wait."""
        inside.append(who)
        if len(inside) == 2:
            both_in.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(who)
            if len(cancelled) == 2:
                both_out.set()
            raise
        return "never"

    router = Router(lead=[tool_reply(task_call("A", "job A"), task_call("B", "job B")), "unreachable"],
                    subs={"job A": [tool_reply(call("wait_forever", who="A"))], "job B": [tool_reply(call("wait_forever", who="B"))]})
    lead = lead_factory(router, tools=[wait_forever])
    run = asyncio.ensure_future(lead.send("go"))
    await asyncio.wait_for(both_in.wait(), 10)
    run.cancel()
    try:
        await run
    except asyncio.CancelledError:
        pass
    await asyncio.wait_for(both_out.wait(), 5)  # a guard against hanging, not a timing claim
    assert sorted(cancelled) == ["A", "B"]


async def test_bad_calls_get_clear_tool_errors(lead_factory):
    router = Router(lead=[tool_reply(task_call("empty", "  "), task_call("odd", "job odd", subagent_type="wizard"),
                                     task_call("m", "job m", model="no-such-model")), "ok"],
                    subs={"job odd": ["x"], "job m": ["x"]})
    lead = lead_factory(router)
    state = await lead.send("go")
    contents = [m.content for m in lead.task_messages(state)]
    assert any("`prompt` is empty" in c for c in contents)
    assert any("unknown subagent_type 'wizard'; use one of: bash, general-purpose" in c for c in contents)
    assert any("model unavailable" in c and "no-such-model" in c for c in contents)


async def test_a_subagent_cannot_delegate(lead_factory):
    from harness.config.app_config import SubagentsConfig
    from harness.subagents import build_task_tool

    tool_ = build_task_tool(config=SubagentsConfig(enabled=True), lead_tools=[], model_factory=lambda name: (None, "m"),
                            chain=lambda *args: ([], []))

    class Runtime:
        context = {"subagent_depth": 1, "thread_id": "t"}
        state = {}
        tool_call_id = "c1"
        config = {}

    result = await tool_.coroutine(description="x", prompt="do it", runtime=Runtime())
    assert result.status == "error" and "a subagent cannot delegate" in result.content


async def test_custom_type_from_config_gets_its_prompt_tools_and_limits(lead_factory):
    @tool
    def lookup(q: str) -> str:
        """Look up."""
        return f"found {q}"

    @tool
    def other(q: str) -> str:
        """Something else."""
        return "other"

    yaml = ("  types:\n    researcher:\n      description: Finds facts.\n      prompt: You are a research subagent of DeerFlow. Be brief.\n"
            "      tools: [lookup, task]\n      max_turns: 3\n")
    router = Router(lead=[tool_reply(task_call("R", "job R", subagent_type="researcher")), "ok"],
                    subs={"job R": [tool_reply(call("lookup", q="x")), "facts: found x"]})
    lead = lead_factory(router, tools=[lookup, other], extra_yaml=yaml)
    state = await lead.send("go")
    (msg,) = lead.task_messages(state)
    assert "facts: found x" in msg.content
    sub_requests = [r for r in lead.model.requests if "research subagent" in r.system_text]
    assert sub_requests and sub_requests[0].tools == ["lookup"]  # `task` is never given to a subagent
    assert state["delegations"][0]["subagent_type"] == "researcher"


async def test_the_runs_token_budget_counts_its_subagents(lead_factory):
    router = Router(lead=[tool_reply(task_call("Big", "job big"), usage={"input_tokens": 50, "output_tokens": 10}), "should not be called"],
                    subs={"job big": [Reply(text="a long answer", usage={"input_tokens": 800, "output_tokens": 200})]})
    lead = lead_factory(router, configurable={"token_budget": 500})
    state = await lead.send("go")
    assert state["stop_reason"] == "token_budget_exhausted"
    assert "used its token budget (1060 of 500 tokens)" in state["messages"][-1].content
    assert state["token_usage"]["test-model"]["total_tokens"] == 1060  # lead 60 + subagent 1000, in thread state too


async def test_subagents_see_the_users_skills(lead_factory):
    router = Router(lead=[tool_reply(task_call("A", "job A")), "Done."], subs={"job A": ["sub result"]})
    lead = lead_factory(router)
    await lead.send("delegate one thing")
    sub_requests = [r for r in lead.model.requests if "subagent of DeerFlow" in r.system_text]
    lead_requests = [r for r in lead.model.requests if "subagent of DeerFlow" not in r.system_text]
    assert sub_requests and lead_requests
    # the same enabled public skills, listed the same way, in the subagent's prompt as in the lead's
    assert "/mnt/skills/public/deep-research/SKILL.md" in sub_requests[0].system_text
    assert "/mnt/skills/public/deep-research/SKILL.md" in lead_requests[0].system_text
