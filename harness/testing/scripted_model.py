"""A LangChain chat model that replays a script instead of calling a provider.

It behaves like a real streaming provider where the agent can tell: text arrives in
chunks, tool calls arrive as argument fragments (``tool_call_chunks``) that only parse
once the stream ends, the last chunk carries ``usage_metadata`` and a finish reason, and
invalid JSON arguments end up in ``invalid_tool_calls`` as they do with ``ChatOpenAI``.

Every request is recorded in :attr:`ScriptedChatModel.requests` (messages, tool names,
settings) so tests can assert what the model was actually shown.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, PrivateAttr

from harness.testing.script import Reply, Script, ScriptItem, rough_tokens, split_text


class ScriptedProviderError(Exception):
    """What the scripted model raises for a ``Reply(status=...)``; carries ``status_code``
    like the OpenAI SDK's errors so error handling classifies both the same way."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"Error code: {status_code} - {message}")
        self.status_code = status_code


class ScriptExhaustedError(Exception):
    """The model was called more often than the script allows (a test bug, not transient)."""


@dataclass
class RecordedRequest:
    messages: list[BaseMessage]
    tools: list[str] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def system_text(self) -> str:
        return "\n".join(str(m.content) for m in self.messages if m.type == "system")


class ScriptedChatModel(BaseChatModel):
    """``ScriptedChatModel(script=["hello", tool_reply(call("ls", path="/"))])``.

    Items are :class:`~harness.testing.script.Reply`, strings (text replies) or callables
    that receive the request's message list and return one of those. ``loop=True`` cycles
    the script (benchmarks); otherwise running past its end raises
    :class:`ScriptExhaustedError`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: list[Any] = []
    loop: bool = False
    model_name: str = "scripted-model"
    default_chunk_size: int | None = None
    # False: keep no request (a benchmark's looping model serves thousands of runs, and each
    # request holds its whole message list).
    record_requests: bool = True

    _cursor: Script = PrivateAttr()
    _requests: list[RecordedRequest] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: Any) -> None:
        self._cursor = Script(self.script, loop=self.loop)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def requests(self) -> list[RecordedRequest]:
        return self._requests

    def add(self, *items: ScriptItem) -> None:
        """Append replies, e.g. for the next turn of a conversation."""
        self._cursor.extend(items)

    @property
    def remaining(self) -> int:
        return self._cursor.remaining

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, **({"tool_choice": tool_choice} if tool_choice else {}), **kwargs)

    # -- the script -------------------------------------------------------------------

    def _next_reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> Reply:
        tools = [t.get("function", {}).get("name", "") for t in kwargs.get("tools") or []]
        if self.record_requests:
            self._requests.append(RecordedRequest(list(messages), tools, {k: v for k, v in kwargs.items() if k != "tools"}))
        reply = self._cursor.next(messages)
        if reply is None:
            raise ScriptExhaustedError(f"scripted model called {len(self._requests)} times; the script has no reply left")
        if reply.status != 200:
            raise ScriptedProviderError(reply.status, reply.error_message)
        return reply

    def _chunks(self, reply: Reply, messages: list[BaseMessage]) -> Iterator[AIMessageChunk]:
        msg_id = f"run-scripted-{uuid.uuid4().hex[:12]}"
        size = self.default_chunk_size or reply.chunk_size
        if reply.reasoning:
            yield AIMessageChunk(content="", id=msg_id, additional_kwargs={"reasoning_content": reply.reasoning})
        for piece in split_text(reply.text, size):
            yield AIMessageChunk(content=piece, id=msg_id)
        for index, spec in enumerate(reply.tool_calls):
            raw = spec.args_json()
            pieces = split_text(raw, max(size, 8)) or [""]
            for n, piece in enumerate(pieces):
                yield AIMessageChunk(
                    content="",
                    id=msg_id,
                    tool_call_chunks=[{
                        "name": spec.name if n == 0 else None,
                        "args": piece,
                        "id": spec.call_id() if n == 0 else None,
                        "index": index,
                        "type": "tool_call_chunk",
                    }],
                )
        yield AIMessageChunk(
            content="",
            id=msg_id,
            usage_metadata=self._usage(reply, messages),
            response_metadata={"finish_reason": reply.effective_finish_reason, "model_name": self.model_name},
            chunk_position="last",
        )

    def _usage(self, reply: Reply, messages: list[BaseMessage]) -> dict[str, Any]:
        given = reply.usage or {}
        prompt = given.get("input_tokens")
        if prompt is None:
            prompt = sum(rough_tokens(m.text if isinstance(m.content, list) else str(m.content)) for m in messages)
        out = given.get("output_tokens")
        if out is None:
            out = rough_tokens(reply.text) + sum(rough_tokens(json.dumps(t.args) if not isinstance(t.args, str) else t.args) for t in reply.tool_calls)
        usage: dict[str, Any] = {"input_tokens": prompt, "output_tokens": out, "total_tokens": prompt + out}
        if given.get("cache_read"):
            usage["input_token_details"] = {"cache_read": given["cache_read"]}
        return usage

    @staticmethod
    def _merge(chunks: list[AIMessageChunk]) -> AIMessage:
        total = chunks[0]
        for c in chunks[1:]:
            total = total + c
        # Non-streamed responses parse arguments strictly, as ChatOpenAI does: broken JSON
        # lands in invalid_tool_calls instead of being partially repaired.
        calls, invalid = [], []
        for tc in total.tool_call_chunks:
            try:
                args = json.loads(tc.get("args") or "{}")
                if not isinstance(args, dict):
                    raise ValueError("arguments are not an object")
                calls.append({"name": tc.get("name") or "", "args": args, "id": tc.get("id"), "type": "tool_call"})
            except ValueError as exc:
                invalid.append({"name": tc.get("name"), "args": tc.get("args"), "id": tc.get("id"), "error": str(exc), "type": "invalid_tool_call"})
        msg = AIMessage(
            content=total.content,
            id=total.id,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            usage_metadata=total.usage_metadata,
            response_metadata=total.response_metadata,
            additional_kwargs=total.additional_kwargs,
        )
        return msg

    # -- LangChain hooks -----------------------------------------------------------------

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        reply = self._next_reply(messages, kwargs)
        if reply.delay:
            time.sleep(reply.delay)
        msg = self._merge(list(self._chunks(reply, messages)))
        return ChatResult(generations=[ChatGeneration(message=msg, generation_info={"finish_reason": reply.effective_finish_reason})])

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        reply = self._next_reply(messages, kwargs)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        msg = self._merge(list(self._chunks(reply, messages)))
        return ChatResult(generations=[ChatGeneration(message=msg, generation_info={"finish_reason": reply.effective_finish_reason})])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        reply = self._next_reply(messages, kwargs)
        if reply.delay:
            time.sleep(reply.delay)
        for chunk in self._chunks(reply, messages):
            gen = ChatGenerationChunk(message=chunk)
            if run_manager and isinstance(chunk.content, str) and chunk.content:
                run_manager.on_llm_new_token(chunk.content, chunk=gen)
            yield gen

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        reply = self._next_reply(messages, kwargs)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        for chunk in self._chunks(reply, messages):
            gen = ChatGenerationChunk(message=chunk)
            if run_manager and isinstance(chunk.content, str) and chunk.content:
                await run_manager.on_llm_new_token(chunk.content, chunk=gen)
            yield gen
