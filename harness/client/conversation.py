"""Turns: ``stream``/``astream`` (and ``astream_events``, the same events under the name
LangChain users reach for), ``chat``/``achat``, ``get_state``, ``update_memory``.

Each turn has a run id and a trace id (the caller's ``trace_id=``, else the one bound in
``harness.observability.context``, else a new one), carried in the turn's trace metadata and
tracer callbacks as the server's runs carry them, and reported in the ``end`` event. A turn
given memory starts with the ``custom`` ``context:memory`` event the server streams.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.types import Command

from harness.agents.markers import INTERNAL_KEY, message_text
from harness.client.events import STREAM_MODES, FinalText, StreamEvent, Translator
from harness.memory.injection import MEMORY_CONTEXT_EVENT, MEMORY_CONTEXT_KEY, Injection
from harness.models import create_chat_model
from harness.observability.context import new_request_id, trace_id_var
from harness.observability.tracing import run_callbacks, trace_metadata


class ConversationMixin:
    def _memory(self, message: str | BaseMessage | None, overrides: dict[str, Any]) -> Injection | None:
        cfg = self.app_config.memory
        if not cfg.enabled or not cfg.injection_enabled or overrides.get("memory") is False:
            return None
        from harness.memory.injection import memory_injection

        query = message_text(message) if isinstance(message, BaseMessage) else str(message or "")
        agent = str(overrides.get("agent_name") or self._defaults.get("agent_name") or "")
        return memory_injection(self._memory_store(), self.user_id, agent, query, cfg.max_injection_tokens,
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
        return run_update(self._memory_store(), model, job, cfg)

    def _prepare(self, message: str | BaseMessage | None, thread_id: str | None, resume: Any, overrides: dict[str, Any],
                 memory: Injection | None = None):
        trace_id = str(overrides.pop("trace_id", None) or trace_id_var.get() or new_request_id())
        options = {**self._defaults, **overrides}
        options = {k: v for k, v in options.items() if v is not None}
        thread_id = self._thread_id(thread_id) if thread_id else uuid.uuid4().hex
        run_id = uuid.uuid4().hex
        agent = self._agent(options)
        app = self.app_config
        config = {"configurable": {**options, "thread_id": thread_id, "user_id": self.user_id, "run_id": run_id},
                  "recursion_limit": int(options.get("recursion_limit", 100)),
                  "metadata": trace_metadata(run_id=run_id, thread_id=thread_id, request_id=trace_id, user_id=self.user_id,
                                             assistant_id="lead_agent", agent_name=options.get("agent_name"),
                                             model_name=options.get("model_name"), trace_id=trace_id)}
        callbacks = run_callbacks(app.tracing, trace_id=trace_id)
        if callbacks:
            config["callbacks"] = callbacks
        config["configurable"].pop(MEMORY_CONTEXT_KEY, None)
        if memory is not None:
            config["configurable"][MEMORY_CONTEXT_KEY] = memory.text
        if resume is not None:
            graph_input: Any = Command(resume=resume)
        elif message is None:
            raise ValueError("pass a message, or resume= to answer a pending clarification")
        else:
            msg = message if isinstance(message, BaseMessage) else HumanMessage(content=str(message))
            if isinstance(msg, HumanMessage) and INTERNAL_KEY in msg.additional_kwargs:
                msg = msg.model_copy(update={"additional_kwargs": {k: v for k, v in msg.additional_kwargs.items() if k != INTERNAL_KEY}})
            graph_input = {"messages": [msg]}
        first = [StreamEvent("custom", {"type": MEMORY_CONTEXT_EVENT, **memory.event()})] if memory is not None else []
        return agent, graph_input, config, Translator(thread_id, run_id=run_id, trace_id=trace_id), first

    def stream(self, message: str | BaseMessage | None = None, thread_id: str | None = None, *, resume: Any = None, **overrides: Any) -> Iterator[StreamEvent]:
        """Run one turn and yield events; pass ``resume=`` to answer a clarification."""
        memory = self._memory(message, overrides)
        agent, graph_input, config, tr, first = self._prepare(message, thread_id, resume, overrides, memory)
        yield from first
        for mode, chunk in agent.stream(graph_input, config, stream_mode=STREAM_MODES):
            yield from tr.feed(mode, chunk)
        yield tr.end(agent.get_state(config).interrupts)

    async def astream(self, message: str | BaseMessage | None = None, thread_id: str | None = None, *, resume: Any = None, **overrides: Any) -> AsyncIterator[StreamEvent]:
        memory = await asyncio.to_thread(self._memory, message, overrides)
        agent, graph_input, config, tr, first = self._prepare(message, thread_id, resume, overrides, memory)
        for event in first:
            yield event
        async for mode, chunk in agent.astream(graph_input, config, stream_mode=STREAM_MODES):
            for event in tr.feed(mode, chunk):
                yield event
        yield tr.end((await agent.aget_state(config)).interrupts)

    def astream_events(self, message: str | BaseMessage | None = None, thread_id: str | None = None, *, resume: Any = None,
                       **overrides: Any) -> AsyncIterator[StreamEvent]:
        """The same events as :meth:`astream`: every ``custom`` event of tools and middlewares
        (and ``context:memory``) arrives here as the server streams it to ``custom`` readers."""
        return self.astream(message, thread_id, resume=resume, **overrides)

    def chat(self, message: str | BaseMessage | None = None, thread_id: str | None = None, *, resume: Any = None, **overrides: Any) -> str:
        """Run one turn and return the final AI text (or the pending clarification text)."""
        collector = FinalText()
        for event in self.stream(message, thread_id, resume=resume, **overrides):
            collector.add(event)
        return collector.result()

    async def achat(self, message: str | BaseMessage | None = None, thread_id: str | None = None, *, resume: Any = None, **overrides: Any) -> str:
        collector = FinalText()
        async for event in self.astream(message, thread_id, resume=resume, **overrides):
            collector.add(event)
        return collector.result()

    def list_threads(self, limit: int = 10) -> dict[str, Any]:
        """``{"thread_list": [{thread_id, title, created_at, updated_at, latest_checkpoint_id}]}``,
        newest first: this user's threads in the checkpointer (every turn's checkpoints carry
        the user's id in their metadata, the client's and the server's runs alike)."""
        threads: dict[str, dict[str, Any]] = {}
        for cp in self.checkpointer.list(None, filter={"user_id": self.user_id}):
            conf = cp.config.get("configurable") or {}
            tid, ts = conf.get("thread_id"), cp.checkpoint.get("ts")
            if not tid or conf.get("checkpoint_ns"):
                continue
            entry = threads.setdefault(tid, {"thread_id": tid, "created_at": ts, "updated_at": ts,
                                             "latest_checkpoint_id": conf.get("checkpoint_id")})
            if ts and ts < (entry["created_at"] or ts):
                entry["created_at"] = ts
            if ts and ts > (entry["updated_at"] or ""):
                entry.update(updated_at=ts, latest_checkpoint_id=conf.get("checkpoint_id"))
        newest = sorted(threads.values(), key=lambda t: t["updated_at"] or "", reverse=True)[:limit]
        for entry in newest:
            entry["title"] = self.get_state(entry["thread_id"]).get("title")
        return {"thread_list": newest}

    def get_state(self, thread_id: str) -> dict[str, Any]:
        """The thread's current state values (messages as LangChain objects)."""
        return self._default_agent().get_state({"configurable": {"thread_id": self._thread_id(thread_id)}}).values
