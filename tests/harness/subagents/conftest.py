"""A lead agent with subagents on, around one scripted model that answers the lead and each
subagent by who is asking (a subagent's request carries its own system prompt and task)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from harness.agents.lead_agent import make_lead_agent
from harness.config import parse_config
from harness.testing import Reply, ScriptedChatModel, call, tool_reply
from tests.support.subagents import Router, task_call

BASE = """
config_version: 1
models:
  - name: test-model
    use: langchain_openai:ChatOpenAI
    model: test-model
    base_url: http://127.0.0.1:9/v1
    api_key: test-key
subagents:
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


class Lead:
    def __init__(self, router, *, extra_yaml="", tools=(), configurable=None):
        self.model = ScriptedChatModel(script=[router], loop=True)
        self.checkpointer = InMemorySaver()
        self.thread_id = f"t-{uuid.uuid4().hex[:10]}"
        self.graph = make_lead_agent({"configurable": {"subagent_enabled": True, "llm_retry_initial_delay": 0, **(configurable or {})}},
                                     model=self.model, tools=list(tools), app_config=app(extra_yaml), checkpointer=self.checkpointer)
        self.events = []

    def config(self, run_id=None):
        return {"configurable": {"thread_id": self.thread_id, "user_id": "tester", "run_id": run_id or uuid.uuid4().hex}}

    async def send(self, text, run_id=None):
        config = self.config(run_id)
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
