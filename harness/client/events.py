"""The client's event stream: LangGraph ``(mode, chunk)`` pairs turned into the events the
server streams (``values``, ``messages-tuple`` deltas, ``custom``, ``end``), deduplicated by
message id, and the final text of a turn rebuilt from them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage

from harness.agents.markers import message_text

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
class Translator:
    """Turns LangGraph ``(mode, chunk)`` pairs into client events, deduplicating by id."""

    thread_id: str
    run_id: str = ""
    trace_id: str = ""
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
            "run_id": self.run_id,
            "trace_id": self.trace_id,
            "usage": total,
            "stop_reason": self.last_state.get("stop_reason"),
            "interrupts": [getattr(i, "value", i) for i in interrupts],
        })


class FinalText:
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
