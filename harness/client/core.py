"""The client object: its options, its stores, its agent cache. Each group of methods lives
in a mixin named for what it covers; they share the state set up here."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from harness.client.agents import AgentsMixin
from harness.client.conversation import ConversationMixin
from harness.client.files import FilesMixin
from harness.client.memory import MemoryMixin
from harness.client.settings import SettingsMixin
from harness.client.thread_actions import ThreadActionsMixin
from harness.config import AppConfig, get_app_config
from harness.errors import InvalidRequest
from harness.sandbox.paths import check_id

def _checkpointer(value: Any) -> Any:
    if value is None:
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver()
    if isinstance(value, str):
        from harness.runtime.checkpointer import open_sync_checkpointer

        return open_sync_checkpointer(value)
    return value


class DeerFlowClient(ConversationMixin, SettingsMixin, MemoryMixin, FilesMixin, AgentsMixin, ThreadActionsMixin):
    """The lead agent in-process. Agents are built lazily and cached per option set;
    ``reset_agent()`` drops them (after changing skills, MCP servers or memory).

    ``checkpointer``: a LangGraph saver, or a URL (``sqlite:///path``, ``postgresql://…``); in
    memory when not given. ``user_id``: whose threads, files, memory and agents these are (on
    a server's data, the user's id). ``memory_store``: a ``harness.memory.MemoryStore``; files
    under ``DEER_FLOW_HOME/memory`` when not given. ``is_admin``: may see skills installed for
    everyone as editable, as staff do on the server."""

    def __init__(self, *, checkpointer: Any = None, app_config: AppConfig | None = None, model_name: str | None = None,
                 thinking_enabled: bool = False, plan_mode: bool = False, subagent_enabled: bool = False,
                 agent_name: str | None = None, user_id: str = "default", non_interactive: bool = False,
                 model: BaseChatModel | None = None, tools: Sequence[BaseTool] | None = None,
                 memory_store: Any = None, is_admin: bool = False, **options: Any) -> None:
        self.checkpointer = _checkpointer(checkpointer)
        self._app_config = app_config
        self.user_id = check_id("user id", user_id)
        self.is_admin = is_admin
        self._model = model
        self._tools = tools
        self.memory_store = memory_store
        self._defaults = {"model_name": model_name, "thinking_enabled": thinking_enabled, "is_plan_mode": plan_mode,
                          "subagent_enabled": subagent_enabled, "agent_name": agent_name, "non_interactive": non_interactive, **options}
        self._agents: dict[Any, Any] = {}
        self._lock = threading.Lock()

    @property
    def app_config(self) -> AppConfig:
        return self._app_config or get_app_config()

    def reset_agent(self) -> None:
        with self._lock:
            self._agents.clear()

    def _agent(self, options: dict[str, Any]) -> Any:
        from harness.agents.lead_agent import make_lead_agent

        app = self.app_config
        key = (id(app), tuple(sorted((k, repr(v)) for k, v in options.items())))
        with self._lock:
            cached = self._agents.get(key)
            if cached is None:
                # a config edit yields a new AppConfig object: old builds are stale. The
                # entry keeps its AppConfig alive so its id cannot be reused meanwhile.
                self._agents = {k: v for k, v in self._agents.items() if k[0] == id(app)}
                agent = make_lead_agent({"configurable": options}, model=self._model, tools=self._tools,
                                        checkpointer=self.checkpointer, app_config=app)
                cached = self._agents[key] = (app, agent)
            return cached[1]

    def _default_agent(self) -> Any:
        return self._agent({k: v for k, v in self._defaults.items() if v is not None})

    @staticmethod
    def _thread_id(thread_id: str) -> str:
        try:
            return check_id("thread id", thread_id)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
