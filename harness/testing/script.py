"""The reply vocabulary shared by the scripted chat model and the loopback OpenAI server.

A script is a list of :class:`Reply` objects (or plain strings, meaning a text reply).
The same script can drive either fake, so a test can move from the in-process model to
the real ``ChatOpenAI`` HTTP path without rewriting its expectations.
"""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

_counter = itertools.count(1)


@dataclass
class ToolCallSpec:
    """One tool call the model makes. ``args`` as a string is sent verbatim, which is
    how a test produces invalid JSON arguments."""

    name: str
    args: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def call_id(self) -> str:
        if self.id is None:
            self.id = f"call_{next(_counter)}_{uuid.uuid4().hex[:8]}"
        return self.id

    def args_json(self) -> str:
        return self.args if isinstance(self.args, str) else json.dumps(self.args)


@dataclass
class Reply:
    """One model turn.

    ``status`` other than 200 makes the loopback server answer with that HTTP error (the
    scripted model raises :class:`ScriptedProviderError` instead); ``delay`` waits before
    answering (a timeout test sets it above the client's timeout). ``usage`` overrides the
    token counts: keys ``input_tokens``, ``output_tokens``, ``cache_read``.
    """

    text: str = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    reasoning: str | None = None
    status: int = 200
    error_message: str = "scripted provider error"
    delay: float = 0.0
    chunk_size: int = 6
    # The loopback server holds the answer until the test sets this (an event to wait on,
    # rather than a delay to guess): a run that is busy exactly as long as the test needs.
    hold: threading.Event | None = None

    @property
    def effective_finish_reason(self) -> str:
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


def call(name: str, args: dict[str, Any] | str | None = None, *, id: str | None = None, **kwargs: Any) -> ToolCallSpec:
    """``call("write_file", path=..., content=...)`` — shorthand for a tool call."""
    return ToolCallSpec(name=name, args=args if args is not None else kwargs, id=id)


def tool_reply(*calls: ToolCallSpec, text: str = "", **kwargs: Any) -> Reply:
    return Reply(text=text, tool_calls=list(calls), **kwargs)


ScriptItem = Reply | str | Callable[[list[dict[str, Any]]], "Reply | str"]


def as_reply(item: Reply | str) -> Reply:
    return Reply(text=item) if isinstance(item, str) else item


def split_text(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)] or []


def rough_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters a token."""
    return max(1, (len(text) + 3) // 4) if text else 0


class Script:
    """A thread-safe cursor over script items; ``loop=True`` cycles forever (benchmarks)."""

    def __init__(self, items: Sequence[ScriptItem], *, loop: bool = False) -> None:
        import threading

        self._items = list(items)
        self._loop = loop
        self._pos = 0
        self._lock = threading.Lock()

    def next(self, request_messages: list[dict[str, Any]]) -> Reply | None:
        with self._lock:
            if not self._items:
                return None
            if self._pos >= len(self._items):
                if not self._loop:
                    return None
                self._pos = 0
            item = self._items[self._pos]
            self._pos += 1
        if callable(item) and not isinstance(item, Reply | str):
            item = item(request_messages)
        return as_reply(item)

    def extend(self, items: Sequence[ScriptItem]) -> None:
        with self._lock:
            self._items.extend(items)

    @property
    def remaining(self) -> int:
        with self._lock:
            return max(0, len(self._items) - self._pos)
