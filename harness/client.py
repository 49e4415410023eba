"""``DeerFlowClient``: the lead agent in-process, without the web server.

It builds the same graph as the server (``make_lead_agent``) from the same config files,
keeps each thread's state in a LangGraph checkpointer (in memory by default; pass any
saver to persist), and streams events shaped like the server's:

- ``values``: the state snapshot (title, messages, artifacts, todos, …) after each step;
- ``messages-tuple``: AI text as **deltas** (concatenate by ``id``; reasoning models also
  send ``reasoning`` deltas), each tool call once
  (``{"type": "ai", "tool_calls": [...]}``) and each tool result once;
- ``custom``: whatever tools and middlewares emit through LangGraph's stream writer;
- ``end``: token usage counted once per AI message, the stop reason, pending interrupts
  (a clarification question waiting for ``resume=``) and the thread id.

    client = DeerFlowClient()
    print(client.chat("Write hello.txt in the outputs folder", thread_id="t1"))
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command

from harness.agents.markers import INTERNAL_KEY, message_text
from harness.config import AppConfig, get_app_config
from harness.memory.injection import MEMORY_CONTEXT_KEY
from harness.models import create_chat_model, get_model_config, list_models, model_info

STREAM_MODES = ["values", "messages", "custom"]
_STATE_KEYS = ("title", "artifacts", "todos", "uploaded_files", "goal", "summary_text", "stop_reason", "token_usage", "sandbox", "thread_data")


@dataclass
class StreamEvent:
    type: str  # "values" | "messages-tuple" | "custom" | "end"
    data: Any


def serialize_message(message: BaseMessage) -> dict[str, Any]:
    data = message.model_dump(exclude_none=False)
    if isinstance(message, ToolMessage) and message.artifact is None:
        data.pop("artifact", None)
    return data


@dataclass
class _Translator:
    """Turns LangGraph ``(mode, chunk)`` pairs into client events, deduplicating by id."""

    thread_id: str
    preexisting: set[str] | None = None
    text_ids: set[str] = field(default_factory=set)
    tool_call_msgs: set[str] = field(default_factory=set)
    tool_results: set[str] = field(default_factory=set)
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_state: dict[str, Any] = field(default_factory=dict)

    def _text(self, msg_id: str, delta: str) -> StreamEvent:
        self.text_ids.add(msg_id)
        return StreamEvent("messages-tuple", {"type": "ai", "id": msg_id, "content": delta})

    def _ai_complete(self, msg: AIMessage) -> list[StreamEvent]:
        out = []
        if msg.id not in self.text_ids and (text := message_text(msg)):
            out.append(self._text(msg.id, text))
        if msg.tool_calls and msg.id not in self.tool_call_msgs:
            self.tool_call_msgs.add(msg.id)
            out.append(StreamEvent("messages-tuple", {"type": "ai", "id": msg.id, "tool_calls": [dict(tc) for tc in msg.tool_calls]}))
        return out

    def _tool(self, msg: ToolMessage) -> list[StreamEvent]:
        if msg.tool_call_id in self.tool_results:
            return []
        self.tool_results.add(msg.tool_call_id)
        data = {"type": "tool", "id": msg.id, "tool_call_id": msg.tool_call_id, "name": msg.name, "content": msg.content, "status": msg.status}
        if msg.artifact is not None:
            data["artifact"] = msg.artifact
        return [StreamEvent("messages-tuple", data)]

    def feed(self, mode: str, chunk: Any) -> list[StreamEvent]:
        if mode == "messages":
            msg = chunk[0]
            if isinstance(msg, AIMessageChunk):
                out = []
                reasoning = msg.additional_kwargs.get("reasoning_content")
                if isinstance(reasoning, str) and reasoning:
                    out.append(StreamEvent("messages-tuple", {"type": "ai", "id": msg.id, "reasoning": reasoning}))
                if text := message_text(msg):
                    out.append(self._text(msg.id, text))
                return out
            if isinstance(msg, AIMessage) and (self.preexisting is None or msg.id not in self.preexisting):
                return self._ai_complete(msg)
            if isinstance(msg, ToolMessage):
                return self._tool(msg)
            return []
        if mode == "values":
            messages = chunk.get("messages") or []
            if self.preexisting is None:
                self.preexisting = {m.id for m in messages}
            out: list[StreamEvent] = []
            for m in messages:
                if m.id in self.preexisting:
                    continue
                if isinstance(m, AIMessage):
                    out += self._ai_complete(m)
                    if m.usage_metadata:
                        self.usage[m.id] = dict(m.usage_metadata)
                elif isinstance(m, ToolMessage):
                    out += self._tool(m)
            self.last_state = chunk
            snapshot = {k: chunk.get(k) for k in _STATE_KEYS if k in chunk}
            snapshot["messages"] = [serialize_message(m) for m in messages]
            out.append(StreamEvent("values", snapshot))
            return out
        if mode == "custom":
            return [StreamEvent("custom", chunk)]
        return []

    def end(self, interrupts: Sequence[Any]) -> StreamEvent:
        total = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "cache_read": 0}
        for u in self.usage.values():
            total["input_tokens"] += int(u.get("input_tokens") or 0)
            total["output_tokens"] += int(u.get("output_tokens") or 0)
            total["total_tokens"] += int(u.get("total_tokens") or 0)
            total["cache_read"] += int((u.get("input_token_details") or {}).get("cache_read") or 0)
        return StreamEvent("end", {
            "thread_id": self.thread_id,
            "usage": total,
            "stop_reason": self.last_state.get("stop_reason"),
            "interrupts": [getattr(i, "value", i) for i in interrupts],
        })


class _FinalText:
    """Rebuilds AI texts from deltas; the result is the last non-empty one, or the
    question of a pending clarification."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.end: dict[str, Any] = {}

    def add(self, event: StreamEvent) -> None:
        if event.type == "messages-tuple" and event.data.get("type") == "ai" and "content" in event.data:
            self.texts[event.data["id"]] = self.texts.get(event.data["id"], "") + event.data["content"]
        elif event.type == "end":
            self.end = event.data

    def result(self) -> str:
        for interrupt in self.end.get("interrupts") or []:
            if isinstance(interrupt, dict) and interrupt.get("text"):
                return str(interrupt["text"])
        return next((t for t in reversed(list(self.texts.values())) if t.strip()), "")


class DeerFlowClient:
    """The lead agent in-process. Agents are built lazily and cached per option set;
    ``reset_agent()`` drops them (after changing skills, MCP servers or memory)."""

    def __init__(self, *, checkpointer: Any = None, app_config: AppConfig | None = None, model_name: str | None = None,
                 thinking_enabled: bool = False, plan_mode: bool = False, subagent_enabled: bool = False,
                 agent_name: str | None = None, user_id: str = "default", non_interactive: bool = False,
                 model: BaseChatModel | None = None, tools: Sequence[BaseTool] | None = None,
                 memory_store: Any = None, **options: Any) -> None:
        if checkpointer is None:
            from langgraph.checkpoint.memory import InMemorySaver

            checkpointer = InMemorySaver()
        self.checkpointer = checkpointer
        self._app_config = app_config
        self.user_id = user_id
        self._model = model
        self._tools = tools
        # A harness.memory MemoryStore (FileMemoryStore for a local client): read into each
        # turn when memory.enabled; update_memory(thread_id) learns from a thread.
        self.memory_store = memory_store
        self._defaults = {"model_name": model_name, "thinking_enabled": thinking_enabled, "is_plan_mode": plan_mode,
                          "subagent_enabled": subagent_enabled, "agent_name": agent_name, "non_interactive": non_interactive, **options}
        self._agents: dict[Any, Any] = {}
        self._lock = threading.Lock()

    # -- configuration ---------------------------------------------------------------------

    @property
    def app_config(self) -> AppConfig:
        return self._app_config or get_app_config()

    def list_models(self) -> dict[str, Any]:
        return {"models": list_models(config=self.app_config)}

    def get_model(self, name: str) -> dict[str, Any]:
        return model_info(get_model_config(name, config=self.app_config))

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

    def _memory(self, message: str | BaseMessage | None, overrides: dict[str, Any]) -> str | None:
        cfg = self.app_config.memory
        if self.memory_store is None or not cfg.enabled or not cfg.injection_enabled or overrides.get("memory") is False:
            return None
        from harness.memory.injection import memory_text

        query = message_text(message) if isinstance(message, BaseMessage) else str(message or "")
        agent = str(overrides.get("agent_name") or self._defaults.get("agent_name") or "")
        return memory_text(self.memory_store, self.user_id, agent, query, cfg.max_injection_tokens,
                           token_counting=cfg.token_counting, retrieval_adapter=cfg.retrieval_adapter)

    def update_memory(self, thread_id: str, *, model: BaseChatModel | None = None) -> Any:
        """Learn from a thread now (the embedded client has no background updater): one model
        call, checked and saved like the server's passive update."""
        from harness.memory.updater import UpdateJob, run_update

        messages = []
        for m in self.get_state(thread_id).get("messages", []):
            if m.additional_kwargs.get(INTERNAL_KEY) or (m.type == "ai" and getattr(m, "tool_calls", None)):
                continue
            if m.type in ("human", "ai") and message_text(m).strip():
                messages.append({"role": "user" if m.type == "human" else "assistant", "content": message_text(m), "id": str(m.id or "")})
        cfg = self.app_config.memory
        if model is None:
            name = cfg.model_name or self._defaults.get("model_name")
            model = create_chat_model(name, config=self.app_config) if (name or self.app_config.models) else self._model
        job = UpdateJob(owner=self.user_id, agent=str(self._defaults.get("agent_name") or ""), thread_id=thread_id, run_id="", messages=messages)
        return run_update(self.memory_store, model, job, cfg)

    def _prepare(self, message: str | BaseMessage | None, thread_id: str | None, resume: Any, overrides: dict[str, Any],
                 memory: str | None = None):
        options = {**self._defaults, **overrides}
        options = {k: v for k, v in options.items() if v is not None}
        thread_id = thread_id or uuid.uuid4().hex
        agent = self._agent(options)
        config = {"configurable": {**options, "thread_id": thread_id, "user_id": self.user_id, "run_id": uuid.uuid4().hex},
                  "recursion_limit": int(options.get("recursion_limit", 100))}
        config["configurable"].pop(MEMORY_CONTEXT_KEY, None)
        if memory:
            config["configurable"][MEMORY_CONTEXT_KEY] = memory
        if resume is not None:
            graph_input: Any = Command(resume=resume)
        elif message is None:
            raise ValueError("pass a message, or resume= to answer a pending clarification")
        else:
            msg = message if isinstance(message, BaseMessage) else HumanMessage(content=str(message))
            if isinstance(msg, HumanMessage) and INTERNAL_KEY in msg.additional_kwargs:
                msg = msg.model_copy(update={"additional_kwargs": {k: v for k, v in msg.additional_kwargs.items() if k != INTERNAL_KEY}})
            graph_input = {"messages": [msg]}
        return agent, graph_input, config, _Translator(thread_id)

    # -- conversation --------------------------------------------------------------------

    def stream(self, message: str | BaseMessage | None = None, thread_id: str | None = None, *, resume: Any = None, **overrides: Any) -> Iterator[StreamEvent]:
        """Run one turn and yield events; pass ``resume=`` to answer a clarification."""
        agent, graph_input, config, tr = self._prepare(message, thread_id, resume, overrides, self._memory(message, overrides))
        for mode, chunk in agent.stream(graph_input, config, stream_mode=STREAM_MODES):
            yield from tr.feed(mode, chunk)
        yield tr.end(agent.get_state(config).interrupts)

    async def astream(self, message: str | BaseMessage | None = None, thread_id: str | None = None, *, resume: Any = None, **overrides: Any) -> AsyncIterator[StreamEvent]:
        memory = await asyncio.to_thread(self._memory, message, overrides) if self.memory_store is not None else None
        agent, graph_input, config, tr = self._prepare(message, thread_id, resume, overrides, memory)
        async for mode, chunk in agent.astream(graph_input, config, stream_mode=STREAM_MODES):
            for event in tr.feed(mode, chunk):
                yield event
        yield tr.end((await agent.aget_state(config)).interrupts)

    def chat(self, message: str | BaseMessage | None = None, thread_id: str | None = None, *, resume: Any = None, **overrides: Any) -> str:
        """Run one turn and return the final AI text (or the pending clarification text)."""
        collector = _FinalText()
        for event in self.stream(message, thread_id, resume=resume, **overrides):
            collector.add(event)
        return collector.result()

    async def achat(self, message: str | BaseMessage | None = None, thread_id: str | None = None, *, resume: Any = None, **overrides: Any) -> str:
        collector = _FinalText()
        async for event in self.astream(message, thread_id, resume=resume, **overrides):
            collector.add(event)
        return collector.result()

    def get_state(self, thread_id: str) -> dict[str, Any]:
        """The thread's current state values (messages as LangChain objects)."""
        agent = self._agent({k: v for k, v in self._defaults.items() if v is not None})
        return agent.get_state({"configurable": {"thread_id": thread_id}}).values
