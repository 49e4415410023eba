"""A lead agent with subagents on, around one scripted model that answers the lead and each
subagent by who is asking (a subagent's request carries its own system prompt and task)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool

from harness.config import parse_config
from harness.testing import Reply, call, tool_reply
from tests.support.lead_agent import MODEL_YAML, AgentHarness
from tests.support.subagents import Router, task_call

BASE = MODEL_YAML + """subagents:
  enabled: true
"""


def app(extra: str = ""):
    return parse_config(BASE + extra)


class Barrier:
    """Lets a tool wait until ``n`` callers are inside it at once (proof of overlap)."""

    def __init__(self, n):
        self.n, self.inside, self.log = n, 0, []
        self.full = asyncio.Event()

    async def enter(self, who):
        self.log.append(("in", who))
        self.inside += 1
        if self.inside >= self.n:
            self.full.set()
        await asyncio.wait_for(self.full.wait(), 10)
        self.log.append(("out", who))


class Lead(AgentHarness):
    """The lead with subagents on; ``send`` streams, keeping the ``custom`` events."""

    def __init__(self, router, *, extra_yaml="", tools=(), configurable=None):
        super().__init__([router], loop=True, tools=tools, app=app(extra_yaml),
                         configurable={"subagent_enabled": True, **(configurable or {})})
        self.events = []

    async def send(self, text, run_id=None):
        config = self.config(**({"run_id": run_id} if run_id else {}))
        async for mode, data in self.graph.astream({"messages": [{"role": "user", "content": text}]}, config,
                                                   stream_mode=["custom", "values"], context=dict(config["configurable"])):
            if mode == "custom":
                self.events.append(data)
        return self.graph.get_state(config).values

    def task_messages(self, state):
        return [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "task"]


@pytest.fixture
def lead_factory():
    return Lead


__all__ = ["Barrier", "Lead", "Reply", "Router", "app", "call", "task_call", "tool", "tool_reply"]
