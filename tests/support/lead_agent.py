"""The real lead agent around a scripted model, for harness tests: one graph, its model, an
in-memory checkpointer and a thread, over several turns. The config names a model that is
never reached (port 9): the scripted model answers in its place."""

from __future__ import annotations

import uuid
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from harness.agents.lead_agent import make_lead_agent
from harness.config import parse_config
from harness.testing import ScriptedChatModel

# The one model entry; a test appends model keys (indented four spaces) or sections to it.
MODEL_YAML = """
config_version: 1
models:
  - name: test-model
    use: langchain_openai:ChatOpenAI
    model: test-model
    base_url: http://127.0.0.1:9/v1
    api_key: test-key
"""

BASE_CONFIG = MODEL_YAML + "    context_window: 32000\n    supports_vision: true\n"


def app_config(extra: str = ""):
    return parse_config(BASE_CONFIG + extra)


class AgentHarness:
    """One agent graph + its scripted model + a thread, for multi-turn tests. ``tools``: the
    agent's only tools (none by default); None gives it the configured ones (sandbox, MCP)."""

    def __init__(self, script, *, configurable=None, tools=(), app=None, extra_middlewares=(), loop=False):
        self.model = ScriptedChatModel(script=list(script), loop=loop)
        self.checkpointer = InMemorySaver()
        self.thread_id = f"t-{uuid.uuid4().hex[:10]}"
        self.user_id = "tester"
        self.graph = make_lead_agent(
            {"configurable": {"llm_retry_initial_delay": 0, **(configurable or {})}},
            model=self.model, tools=None if tools is None else list(tools), app_config=app or app_config(),
            checkpointer=self.checkpointer, extra_middlewares=extra_middlewares,
        )

    def config(self, **extra):
        return {"configurable": {"thread_id": self.thread_id, "user_id": self.user_id, "run_id": uuid.uuid4().hex, **extra}}

    async def send(self, text, **extra):
        return await self.graph.ainvoke({"messages": [{"role": "user", "content": text}]}, self.config(**extra))

    def state(self):
        return self.graph.get_state(self.config()).values

    @property
    def outputs(self) -> Path:
        from harness.config import thread_user_data_dir

        return thread_user_data_dir(self.user_id, self.thread_id) / "outputs"
