"""The guardrails provider hook in the real lead agent around a scripted model: a provider
denies one tool and allows the rest, sees whose call it is, fails closed or open, and bad
configuration stops the load naming the key."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool

from harness.config import ConfigError, parse_config
from harness.testing import call, tool_reply
from tests.harness.agents.conftest import BASE_CONFIG, AgentHarness
from tests.support import guardrails as providers


def guard_yaml(use: str, *, fail_closed: bool = True, config: str = "", passport: str | None = None) -> str:
    text = f"guardrails:\n  enabled: true\n  fail_closed: {str(fail_closed).lower()}\n  provider:\n    use: {use}\n"
    if config:
        text += f"    config: {config}\n"
    if passport:
        text += f"  passport: {passport}\n"
    return text


@pytest.fixture
def ran():
    return []


@pytest.fixture
def tools(ran):
    @tool
    def progress(note: str) -> str:
        """Report progress."""
        ran.append(("progress", note))
        return "reported"

    @tool
    def lookup(term: str) -> str:
        """Look a term up."""
        ran.append(("lookup", term))
        return f"{term}: found"

    return [progress, lookup]


@pytest.fixture(autouse=True)
def seen():
    providers.SEEN.clear()
    yield providers.SEEN
    providers.SEEN.clear()


def harness(script, tools, guard: str, **configurable):
    return AgentHarness(script, tools=tools, app=parse_config(BASE_CONFIG + guard), configurable=configurable)


def tool_results(result):
    return {m.name: m for m in result["messages"] if m.type == "tool"}


SCRIPT = [tool_reply(call("progress", note="half way"), call("lookup", term="deer")), "Done, without the progress note."]


@pytest.mark.parametrize("use", ["tests.support.guardrails:DenyToolProvider", "tests.support.guardrails:SyncOnlyDenyProvider"])
async def test_the_provider_denies_one_tool_and_the_run_carries_on(tools, ran, seen, use):
    h = harness(SCRIPT, tools, guard_yaml(use, passport="agent-passport-1"))
    config = h.config(agent_name="helper")
    result = await h.graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)
    assert ran == [("lookup", "deer")]  # the denied call never ran
    results = tool_results(result)
    denied = results["progress"]
    assert denied.status == "error" and "progress reports are switched off here" in denied.content
    assert "test.tool_denied" in denied.content
    assert results["lookup"].content == "deer: found"
    assert result["messages"][-1].content == "Done, without the progress note."
    assert "switched off here" in str(h.model.requests[-1].messages)  # the model read why
    by_tool = {r.tool_name: r for r in seen}
    assert set(by_tool) == {"progress", "lookup"}
    req = by_tool["progress"]
    assert req.tool_input == {"note": "half way"} and req.tool_call_id
    assert (req.thread_id, req.run_id, req.user_id) == (h.thread_id, config["configurable"]["run_id"], "tester")
    assert req.agent_name == "helper" and req.agent_id == "agent-passport-1" and req.is_subagent is False


def test_the_provider_is_asked_on_sync_runs_too(tools, ran, seen):
    h = harness(SCRIPT, tools, guard_yaml("tests.support.guardrails:DenyToolProvider"))
    result = h.graph.invoke({"messages": [{"role": "user", "content": "go"}]}, h.config())
    assert ran == [("lookup", "deer")]
    assert tool_results(result)["progress"].status == "error"


async def test_provider_config_reaches_the_class(tools, ran):
    guard = guard_yaml("tests.support.guardrails:DenyToolProvider", config='{tool: lookup, reason: "no lookups today"}')
    h = harness([tool_reply(call("progress", note="a"), call("lookup", term="b")), "ok"], tools, guard)
    result = await h.send("go")
    assert ran == [("progress", "a")]
    assert "no lookups today" in tool_results(result)["lookup"].content


async def test_a_raising_provider_denies_every_call_when_failing_closed(tools, ran, seen, caplog):
    h = harness(SCRIPT, tools, guard_yaml("tests.support.guardrails:RaisingProvider", fail_closed=True))
    result = await h.send("go")
    assert ran == []
    results = tool_results(result)
    assert all(m.status == "error" and "guardrail provider failed" in m.content for m in results.values())
    assert len(results) == 2 and len(seen) == 2
    assert "policy service unreachable" in caplog.text and "denied" in caplog.text
    assert result["messages"][-1].content == "Done, without the progress note."  # the run still finished


async def test_a_raising_provider_lets_calls_run_when_failing_open(tools, ran, seen, caplog):
    h = harness(SCRIPT, tools, guard_yaml("tests.support.guardrails:RaisingProvider", fail_closed=False))
    result = await h.send("go")
    assert sorted(ran) == [("lookup", "deer"), ("progress", "half way")]
    assert {m.status for m in tool_results(result).values()} == {"success"}
    assert "runs anyway" in caplog.text and "policy service unreachable" in caplog.text


async def test_guardrails_off_asks_no_provider(tools, ran, seen):
    text = "guardrails:\n  enabled: false\n  provider:\n    use: tests.support.guardrails:RaisingProvider\n"
    h = harness(SCRIPT, tools, text)
    await h.send("go")
    assert len(ran) == 2 and seen == []


@pytest.mark.parametrize("text, field, words", [
    ("guardrails:\n  enabled: true\n", "guardrails", "no provider is set"),
    (guard_yaml("tests.support.guardrails:NoSuchProvider"), "guardrails", "has no attribute"),
    (guard_yaml("guard_pkg_not_installed.mod:Provider"), "guardrails", "pip install guard-pkg-not-installed"),
    (guard_yaml("tests.support.guardrails:NotAProvider"), "guardrails", "no evaluate(request) method"),
    (guard_yaml("tests.support.guardrails:DenyToolProvider", config="{colour: red}"), "guardrails", "could not be created with provider.config"),
    (guard_yaml("not a path"), "guardrails.provider.use", "class path"),
    ("guardrails:\n  enabled: true\n  failclosed: true\n", "guardrails.failclosed", "unknown key"),
])
def test_bad_guardrails_config_stops_the_load_naming_the_key(text, field, words):
    with pytest.raises(ConfigError) as err:
        parse_config(BASE_CONFIG + text, "cfg.yaml")
    assert err.value.field == field and words in str(err.value), str(err.value)


def test_a_disabled_section_is_not_loaded():
    config = parse_config(BASE_CONFIG + "guardrails:\n  enabled: false\n  provider:\n    use: guard_pkg_not_installed.mod:Provider\n")
    assert config.guardrails.enabled is False and config.guardrails.provider_instance is None


async def test_a_subagents_calls_are_vetted_too(tools, ran, seen):
    from tests.support.subagents import Router, task_call

    router = Router(lead=[tool_reply(task_call("Report progress", "job A")), "The helper could not report."],
                    subs={"job A": [tool_reply(call("progress", note="from the helper")), "not allowed to report"]})
    guard = guard_yaml("tests.support.guardrails:DenyToolProvider") + "subagents:\n  enabled: true\n"
    h = harness([router] * 6, tools, guard, subagent_enabled=True)
    result = await h.send("delegate")
    assert ran == []  # the subagent's progress call was refused
    sub_requests = [r for r in seen if r.is_subagent]
    assert [r.tool_name for r in sub_requests] == ["progress"]
    assert [r.tool_name for r in seen if not r.is_subagent] == ["task"]
    assert result["messages"][-1].content == "The helper could not report."
