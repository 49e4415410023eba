"""Bound what a tool result puts back into the context, without losing it.

A single ``cat`` of a log or a huge page can fill the context window and crowd out the
conversation. A result longer than ``tool_output.externalize_min_chars`` (per tool:
``tool_overrides``) is written whole to ``outputs/<storage_subdir>/`` of the thread, which
the agent sees as ``/mnt/user-data/outputs/.tool-results/…`` and can page through with
``read_file``; the model gets its head and tail and that path. Where no file can be written
(no thread folders, a full disk) a result longer than ``fallback_max_chars`` is cut to head
and tail with a note saying how much was removed. ``exempt_tools`` (``read_file``) are left
alone: externalizing a read would only send the model to read it again.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from pathlib import Path
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from harness.agents.middlewares._base import map_tool_messages
from harness.config.guards import ToolOutputConfig

logger = logging.getLogger(__name__)

DEFAULT_MAX_CHARS = 24000
VIRTUAL_OUTPUTS = "/mnt/user-data/outputs"
_LOG_TOOLS = frozenset({"bash", "web_fetch"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def cap_text(text: str, max_chars: int, head: int | None = None, tail: int | None = None) -> str:
    """Head and tail of ``text`` within ``max_chars``: 2/3 head by default; head and tail
    sizes that do not fit in ``max_chars`` are scaled down in proportion."""
    if len(text) <= max_chars:
        return text
    if head is None or tail is None or head + tail == 0:
        head, tail = max_chars * 2 // 3, max_chars - max_chars * 2 // 3
    elif head + tail > max_chars:
        head, tail = head * max_chars // (head + tail), tail * max_chars // (head + tail)
    omitted = len(text) - head - tail
    return f"{text[:head]}\n\n[... {omitted} characters omitted from this tool result ...]\n\n{text[-tail:] if tail else ''}"


def _preview(text: str, virtual: str, head: int, tail: int) -> str:
    lines = text.count("\n") + 1
    note = (f"[This result is {len(text)} characters ({lines} lines), too long to show whole. It is saved in full at {virtual}: "
            "read the parts you need with read_file (start_line/end_line) instead of running the tool again.]")
    body = text[:head]
    if tail and len(text) > head:
        body += f"\n\n[... {len(text) - head - min(tail, len(text) - head)} characters not shown ...]\n\n" + text[-min(tail, len(text) - head):]
    return f"{note}\n\n{body}"


def _write(outputs: str, subdir: str, tool: str, text: str) -> str | None:
    """Write the full result and return its virtual path, or None when it cannot be saved."""
    name = f"{_UNSAFE.sub('_', tool)[:64] or 'tool'}-{uuid.uuid4().hex[:12]}.{'log' if tool in _LOG_TOOLS else 'txt'}"
    try:
        folder = Path(outputs) / subdir
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    except (OSError, ValueError) as exc:
        logger.warning("could not save a %d-character %s result (%s); cutting it instead", len(text), tool, exc)
        return None
    return f"{VIRTUAL_OUTPUTS}/{subdir}/{name}"


class ToolOutputBudgetMiddleware(AgentMiddleware):
    """``max_chars`` (the run option ``max_tool_output_chars``, the subagents' fixed cap)
    replaces ``fallback_max_chars``."""

    def __init__(self, max_chars: int | None = None, *, config: ToolOutputConfig | None = None) -> None:
        super().__init__()
        cfg = config or ToolOutputConfig()
        if max_chars is not None:
            cfg = cfg.model_copy(update={"fallback_max_chars": max_chars})
        self.cfg = cfg
        self.max_chars = cfg.fallback_max_chars
        self.exempt = frozenset(cfg.exempt_tools)

    def _threshold(self, name: str) -> int:
        return self.cfg.tool_overrides.get(name, self.cfg.externalize_min_chars)

    def _over(self, msg: Any) -> bool:
        if not isinstance(msg, ToolMessage) or not isinstance(msg.content, str) or (msg.name or "") in self.exempt:
            return False
        size = len(msg.content)
        limit = self._threshold(msg.name or "")
        return (0 < limit < size) or (0 < self.cfg.fallback_max_chars < size)

    def _needs(self, result: Any) -> bool:
        if isinstance(result, ToolMessage):
            return self._over(result)
        update = getattr(result, "update", None)
        return isinstance(update, dict) and any(self._over(m) for m in update.get("messages") or [])

    def _apply(self, request: Any, result: Any) -> Any:
        outputs = ((request.state or {}).get("thread_data") or {}).get("outputs_path") if isinstance(request.state, dict) else None

        def fit(msg: ToolMessage) -> ToolMessage:
            if not self._over(msg):
                return msg
            text, name, cfg = msg.content, msg.name or "tool", self.cfg
            limit = self._threshold(name)
            virtual = _write(outputs, cfg.storage_subdir, name, text) if outputs and 0 < limit < len(text) else None
            if virtual is not None:
                content = _preview(text, virtual, cfg.preview_head_chars, cfg.preview_tail_chars)
            elif 0 < cfg.fallback_max_chars < len(text):
                content = cap_text(text, cfg.fallback_max_chars, cfg.fallback_head_chars, cfg.fallback_tail_chars)
            else:
                return msg
            return msg.model_copy(update={"content": content})

        return map_tool_messages(result, fit)

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        result = handler(request)
        return self._apply(request, result) if self.cfg.enabled and self._needs(result) else result

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        result = await handler(request)
        if not (self.cfg.enabled and self._needs(result)):
            return result
        return await asyncio.to_thread(self._apply, request, result)  # a file write: off the event loop
