"""A subagent's middleware chain is the lead's, from the same config sections: summarization,
the guards, deferred MCP tools, extension middlewares, its tool policy and token budget; and
what comes back (usage, the ledger) reaches the lead. Scripted model throughout."""

from __future__ import annotations

import json
from typing import Annotated

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.types import Command

from harness.testing import Reply, call, tool_reply
from tests.support.subagents import STAMP, Router, looping, same, task_call

SUMMARIZE = """
summarization:
  enabled: true
  trigger: {type: messages, value: 30}
  keep: {type: messages, value: 10}
"""


def sub_requests(lead, marker="subagent of DeerFlow"):
    return [r for r in lead.model.requests if marker in r.system_text]


def lead_requests(lead):
    return [r for r in lead.model.requests if r.system_text and "subagent of DeerFlow" not in r.system_text]


def texts(request):
    return [str(m.content) for m in request.messages]


@tool
def fetch(page: int) -> str:
    """Fetch one page of the report."""
    return f"page {page}: " + "findings " * 40


def paging_subagent(pages, answer):
    """A subagent that fetches ``pages`` pages one call at a time, then answers. Counted by its
    own calls, not by the messages it is shown: a summary shortens those."""
    calls = {"n": 0}

    def reply(messages):
        calls["n"] += 1
        if calls["n"] <= pages:
            return tool_reply(call("fetch", page=calls["n"]), usage={"input_tokens": 20, "output_tokens": 5})
        return Reply(text=answer, usage={"input_tokens": 20, "output_tokens": 5})

    return reply


async def one_task(lead_factory, script, *, tools=(same,), yaml="", **options):
    """The lead delegates one task ("job T"), run by ``script``; the lead and its end state."""
    router = Router(lead=[tool_reply(task_call("T", "job T")), "ok"], subs={"job T": [script]})
    lead = lead_factory(router, tools=list(tools), extra_yaml=yaml, **options)
    lead.router = router
    return lead, await lead.send("go")


async def test_a_subagent_given_40_tool_results_compacts_and_finishes(lead_factory):
    router = Router(lead=[tool_reply(task_call("Read", "job read all pages")), "The report is read."],
                    subs={"job read": [paging_subagent(40, "Read all 40 pages: the findings agree.")]})
    lead = lead_factory(router, tools=[fetch], extra_yaml=SUMMARIZE)
    state = await lead.send("read the report")
    (msg,) = lead.task_messages(state)
    assert msg.additional_kwargs["subagent_status"] == "completed" and "subagent_stop_reason" not in msg.additional_kwargs
    assert "Read all 40 pages" in msg.content
    assert router.summaries >= 1
    requests = sub_requests(lead)
    last = requests[-1]
    # the last request carries the summary and a window, not forty results
    assert any("Summary of the earlier conversation" in t for t in texts(last))
    assert sum(1 for m in last.messages if m.type == "tool") < 20
    assert max(sum(1 for m in r.messages if m.type == "tool") for r in requests) < 30
    # every step was reported once, across the compactions: 40 calls, 40 results, the answer
    steps = [e for e in lead.events if e["type"] == "task_running"]
    assert len(steps) == 81 and [e["message_index"] for e in steps] == list(range(1, 82))
    # the lead's own short conversation was never summarized
    assert not any("Summary of the earlier conversation" in t for r in lead_requests(lead) for t in texts(r))


async def test_without_summarization_a_subagent_keeps_every_result(lead_factory):
    lead, _ = await one_task(lead_factory, paging_subagent(12, "Read 12 pages."), tools=[fetch])
    last = sub_requests(lead)[-1]
    assert lead.router.summaries == 0 and sum(1 for m in last.messages if m.type == "tool") == 12
    assert not any("Summary of the earlier conversation" in t for t in texts(last))


async def test_a_subagent_below_the_trigger_is_not_summarized(lead_factory):
    lead, state = await one_task(lead_factory, paging_subagent(5, "Read 5 pages."), tools=[fetch], yaml=SUMMARIZE)
    assert lead.router.summaries == 0 and "Read 5 pages." in lead.task_messages(state)[0].content


async def test_the_loop_guard_takes_its_limits_from_loop_detection(lead_factory):
    lead, state = await one_task(lead_factory, looping, yaml="loop_detection:\n  warn_threshold: 2\n  hard_limit: 3\n")
    assert state["delegations"][0]["stop_reason"] == "loop_capped"
    # the third identical call set stops it (the default would wait for the fifth)
    last = sub_requests(lead)[-1]
    assert last.tools == [] and sum(1 for m in last.messages if m.type == "tool") == 3
    assert "Stopping: the lookups" in lead.task_messages(state)[0].content


async def test_parallel_subagents_keep_their_own_loop_counts(lead_factory):
    """Both subagents repeat the same call three times; together that would pass the hard
    limit of 4, each alone does not (they share the lead's run id and a compiled graph)."""
    def thrice(messages):
        if sum(1 for m in messages if m.type == "tool") >= 3:
            return "three lookups done"
        return tool_reply(call("same", q="x"))

    yaml = "loop_detection:\n  warn_threshold: 4\n  hard_limit: 4\n"
    router = Router(lead=[tool_reply(task_call("A", "job A"), task_call("B", "job B")), "ok"],
                    subs={"job A": [thrice], "job B": [thrice]})
    lead = lead_factory(router, tools=[same], extra_yaml=yaml)
    state = await lead.send("go")
    assert [d["stop_reason"] for d in state["delegations"]] == [None, None]
    assert all("three lookups done" in m.content for m in lead.task_messages(state))


async def test_loop_detection_off_leaves_a_subagent_to_its_turn_cap(lead_factory):
    _, state = await one_task(lead_factory, looping, yaml="  max_turns: 7\nloop_detection:\n  enabled: false\n")
    assert state["delegations"][0]["stop_reason"] == "turn_capped"


def spender(messages):
    if "reached your limit" in str(messages[-1].content):
        return Reply(text="Partial: two lookups in.", usage={"input_tokens": 10, "output_tokens": 5})
    return tool_reply(call("same", q=str(len(messages))), usage={"input_tokens": 900, "output_tokens": 200})


async def test_subagents_token_budget_caps_a_task_and_it_still_answers(lead_factory):
    lead, state = await one_task(lead_factory, spender, yaml="  token_budget:\n    enabled: true\n    max_tokens: 2000\n",
                                 configurable={"token_budget": 10_000_000})
    (msg,) = lead.task_messages(state)
    assert msg.additional_kwargs["subagent_status"] == "completed" and msg.additional_kwargs["subagent_stop_reason"] == "token_capped"
    assert "Partial: two lookups in." in msg.content
    # the third call would pass 2000 tokens: the model saw two tool-calling turns, then the final nudge
    assert sum(1 for r in sub_requests(lead) if r.tools) == 2


async def test_a_per_type_token_budget_overrides_the_sections(lead_factory):
    yaml = ("  token_budget:\n    enabled: true\n    max_tokens: 2000\n"
            "  agents:\n    general-purpose:\n      token_budget:\n        enabled: false\n  max_turns: 4\n")
    _, state = await one_task(lead_factory, spender, yaml=yaml)
    assert state["delegations"][0]["stop_reason"] == "turn_capped"  # no budget: the turn cap ended it


async def test_tool_output_caps_a_subagents_tool_results_from_config(lead_factory):
    @tool
    def dump() -> str:
        """Dump everything."""
        return "x" * 50_000

    yaml = "tool_output:\n  fallback_max_chars: 3000\n  fallback_head_chars: 1000\n  fallback_tail_chars: 500\n"
    lead, _ = await one_task(lead_factory, lambda m: "dumped" if m[-1].type == "tool" else tool_reply(call("dump")), tools=[dump], yaml=yaml)
    result = next(m for r in sub_requests(lead) for m in r.messages if m.type == "tool")
    assert len(str(result.content)) < 5000


async def test_configured_extension_middlewares_wrap_subagents_too(lead_factory, tmp_path, monkeypatch):
    path = tmp_path / "extensions_config.json"
    path.write_text(json.dumps({"middlewares": ["tests.support.subagents:StampMiddleware"]}))
    monkeypatch.setenv("DEER_FLOW_EXTENSIONS_CONFIG_PATH", str(path))
    lead, _ = await one_task(lead_factory, "done")
    assert STAMP in texts(sub_requests(lead)[0]) and STAMP in texts(lead_requests(lead)[0])


def _named(name):
    def run(x: str = "") -> str:
        return f"{name} ran"

    return StructuredTool.from_function(run, name=name, description=f"The {name} tool.")


@tool("present_files")
def present_files(filepaths: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Show files to the user."""
    return Command(update={"artifacts": filepaths, "messages": [ToolMessage("shown", tool_call_id=tool_call_id, name="present_files")]})


async def test_clarification_and_present_files_are_withheld_unless_a_type_allows_them(lead_factory):
    yaml = ("  types:\n    publisher:\n      description: Publishes.\n      prompt: You are a publishing subagent of DeerFlow.\n"
            "      disallowed_tools: [ask_clarification]\n")
    router = Router(lead=[tool_reply(task_call("G", "job G"), task_call("P", "job P", subagent_type="publisher")), "ok"],
                    subs={"job G": ["general done"],
                          "job P": [tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/report.md"])), "published"]})
    lead = lead_factory(router, tools=[_named("ask_clarification"), present_files, fetch], extra_yaml=yaml)
    state = await lead.send("go")
    general = next(r for r in sub_requests(lead) if "job G" in texts(r)[1])
    publisher = next(r for r in sub_requests(lead, "publishing subagent") if "job P" in texts(r)[1])
    assert sorted(general.tools) == ["fetch"]  # DeerFlow's default: no task, ask_clarification, present_files
    assert sorted(publisher.tools) == ["fetch", "present_files"]
    # what the publisher presented is the user's: it reaches the lead's thread
    assert state["artifacts"] == ["/mnt/user-data/outputs/report.md"]


async def test_a_subagent_gets_deferred_mcp_tools_through_tool_search(lead_factory):
    mcp_tool = _named("files_search")
    mcp_tool.metadata = {"mcp_server": "files"}
    yaml = "tool_search:\n  enabled: true\n"
    router = Router(lead=[tool_reply(task_call("M", "job M")), "ok"],
                    subs={"job M": [tool_reply(call("tool_search", query="select:files_search")),
                                    tool_reply(call("files_search", x="q")), "found it"]})
    lead = lead_factory(router, tools=[mcp_tool, fetch], extra_yaml=yaml)
    state = await lead.send("go")
    first, second, third = sub_requests(lead)
    assert "tool_search" in first.tools and "files_search" not in first.tools
    assert "files_search" in second.tools  # promoted for this task by its own search
    assert any(m.type == "tool" and m.content == "files_search ran" for m in third.messages)
    assert "found it" in lead.task_messages(state)[0].content
    assert "files_search" not in lead_requests(lead)[0].tools  # the lead's own list stays deferred too


async def test_subagent_usage_is_merged_into_the_dispatching_message(lead_factory):
    router = Router(lead=[tool_reply(task_call("A", "job A"), task_call("B", "job B"), usage={"input_tokens": 50, "output_tokens": 10}),
                          Reply(text="done", usage={"input_tokens": 70, "output_tokens": 5})],
                    subs={"job A": [Reply(text="a", usage={"input_tokens": 300, "output_tokens": 100})],
                          "job B": [Reply(text="b", usage={"input_tokens": 200, "output_tokens": 40})]})
    lead = lead_factory(router)
    state = await lead.send("go")
    dispatch = next(m for m in state["messages"] if isinstance(m, AIMessage) and m.tool_calls)
    assert dispatch.usage_metadata["input_tokens"] == 50 + 300 + 200
    assert dispatch.usage_metadata["output_tokens"] == 10 + 100 + 40
    assert dispatch.usage_metadata["total_tokens"] == 60 + 400 + 240
    final = state["messages"][-1]
    assert final.usage_metadata["total_tokens"] == 75  # the answer's own usage is untouched
    assert all(m.additional_kwargs.get("subagent_usage_merged") for m in lead.task_messages(state))
    # thread totals count each subagent once
    assert state["token_usage"]["test-model"]["total_tokens"] == 60 + 400 + 240 + 75


async def test_a_plain_run_merges_nothing(lead_factory):
    lead = lead_factory(Router(lead=[Reply(text="hi", usage={"input_tokens": 5, "output_tokens": 1})], subs={}))
    state = await lead.send("hello")
    assert state["messages"][-1].usage_metadata["total_tokens"] == 6


async def test_delegated_results_come_back_after_the_lead_is_summarized(lead_factory):
    pages = {"n": 0}

    def lead_turn(messages):
        if not any(m.type == "tool" and m.name == "task" for m in messages) and not any(
                "Work already delegated" in str(m.content) for m in messages):
            return tool_reply(task_call("Survey", "job survey the market"))
        pages["n"] += 1
        if pages["n"] <= 14:
            return tool_reply(call("fetch", page=pages["n"]))
        return "Final: using the survey result."

    router = Router(lead=[lead_turn], subs={"job survey": ["The market is 42 units."]})
    yaml = "summarization:\n  enabled: true\n  trigger: {type: messages, value: 12}\n  keep: {type: messages, value: 4}\n"
    lead = lead_factory(router, tools=[fetch], extra_yaml=yaml)
    state = await lead.send("survey, then read the pages")
    assert router.summaries >= 1
    last = lead_requests(lead)[-1]
    assert not any(m.type == "tool" and m.name == "task" for m in last.messages)  # the task's result was compacted away
    block = next(t for t in texts(last) if "Work already delegated" in t)
    assert "[completed] Survey" in block and "The market is 42 units." in block
    assert state["messages"][-1].content == "Final: using the survey result."
    # before the summary the task result was in the messages, and no ledger was added
    early = [r for r in lead_requests(lead) if any(m.type == "tool" and m.name == "task" for m in r.messages)]
    assert early and not any("Work already delegated" in t for r in early for t in texts(r))



async def test_per_type_overrides_set_a_types_skills_and_limits(lead_factory):
    yaml = "  agents:\n    general-purpose:\n      skills: []\n      timeout_seconds: 1\n    bash:\n      max_turns: 3\n"
    lead, state = await one_task(lead_factory, Reply(text="late", delay=30), yaml=yaml)
    (msg,) = lead.task_messages(state)
    assert msg.additional_kwargs["subagent_status"] == "timed_out" and "within 1s" in msg.content
    sub, first_lead = sub_requests(lead)[0], lead_requests(lead)[0]
    assert "/mnt/skills/public/deep-research/SKILL.md" not in sub.system_text  # skills: [] for this type
    assert "/mnt/skills/public/deep-research/SKILL.md" in first_lead.system_text
