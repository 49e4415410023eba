"""The budget check before each model call, in the real lead agent around a scripted model."""

from __future__ import annotations

from decimal import Decimal

import pytest
from langchain_core.tools import tool

from harness.config import parse_config
from harness.governance.budget import BudgetWindow, Cap, set_budget_store
from harness.testing import Reply, call, tool_reply
from tests.harness.agents.conftest import BASE_CONFIG, AgentHarness

ENABLED = "budgets:\n  enabled: true\n"


class WindowStore:
    def __init__(self, window):
        self.window_value = window
        self.calls = 0

    def window(self, user_id):
        self.calls += 1
        return self.window_value


@pytest.fixture
def use_store():
    def install(window):
        store = WindowStore(window)
        set_budget_store(store)
        return store

    yield install
    from harness.governance.budget import NoBudgets

    set_budget_store(NoBudgets())


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def cap(limit, used=0, kind="tokens", period="day"):
    return Cap(period=period, kind=kind, limit=Decimal(limit), used=Decimal(used), resets_at="2026-12-02T00:00:00Z")


async def test_a_run_stops_cleanly_when_its_usage_reaches_the_cap(use_store):
    store = use_store(BudgetWindow(caps=(cap(1000, used=900),)))
    h = AgentHarness([Reply(tool_calls=[call("echo", text="hi")], usage={"input_tokens": 90, "output_tokens": 20}), "never said"],
                     tools=[echo], app=parse_config(BASE_CONFIG + ENABLED))
    result = await h.send("go")
    last = result["messages"][-1]
    assert "daily token budget is used up (1,010 of 1,000 tokens)" in last.content and "2026-12-02T00:00:00Z" in last.content
    assert result["stop_reason"] == "budget_exhausted"
    assert len(h.model.requests) == 1  # the second call never reached the model
    assert store.calls == 1  # the window is read once per run, not per model call


async def test_under_the_cap_nothing_changes(use_store):
    use_store(BudgetWindow(caps=(cap(10_000),)))
    h = AgentHarness([Reply(tool_calls=[call("echo", text="hi")]), "done"], tools=[echo], app=parse_config(BASE_CONFIG + ENABLED))
    result = await h.send("go")
    assert result["messages"][-1].content == "done" and result.get("stop_reason") in (None, "")


async def test_budgets_off_means_no_middleware_and_no_store_call(use_store):
    store = use_store(BudgetWindow(caps=(cap(1, used=5),)))
    h = AgentHarness(["fine"], app=parse_config(BASE_CONFIG))
    assert (await h.send("go"))["messages"][-1].content == "fine"
    assert store.calls == 0


async def test_a_cost_cap_prices_the_run_with_the_configured_prices(use_store):
    # priced by the model's own name (configured models carry their config name; this one is the scripted model)
    prices = {"scripted-model": {"currency": "USD", "input_per_million": 1_000_000, "output_per_million": 0}}
    use_store(BudgetWindow(caps=(cap("0.5", kind="cost", period="month"),), prices=prices))
    h = AgentHarness([Reply(tool_calls=[call("echo", text="x")], usage={"input_tokens": 1, "output_tokens": 1}), "never"],
                     tools=[echo], app=parse_config(BASE_CONFIG + ENABLED))
    result = await h.send("go")
    assert "monthly cost budget is used up (1.0000 of 0.5000)" in result["messages"][-1].content


async def test_subagent_calls_count_and_a_subagent_stops_at_the_cap(use_store):
    from tests.harness.subagents.conftest import Lead
    from tests.support.subagents import Router, task_call

    store = use_store(BudgetWindow(caps=(cap(1000),)))
    router = Router(
        lead=[tool_reply(task_call("Sweep", "sweep job"), usage={"input_tokens": 100, "output_tokens": 10}), "never reached"],
        subs={"sweep job": [Reply(tool_calls=[call("echo", text="x")], usage={"input_tokens": 900, "output_tokens": 50}), "never said"]},
    )
    lead = Lead(router, extra_yaml=ENABLED, tools=[echo])
    state = await lead.send("sweep")
    # lead 110 + subagent 950 = 1,060: the subagent's second call and the lead's next call are not made
    (task,) = lead.task_messages(state)
    assert "budget is used up (1,060 of 1,000 tokens)" in task.content
    assert "budget is used up (1,060 of 1,000 tokens)" in state["messages"][-1].content
    assert state["stop_reason"] == "budget_exhausted"
    assert len(lead.model.requests) == 2  # the lead's first call and the subagent's first call
    assert store.calls == 1  # one window for the whole run, subagents included
