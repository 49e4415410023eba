"""Editing an existing file requires having read its current content in this context.

``read_file`` results are stamped with the SHA-256 of the file as it was read. A
``write_file`` over an existing file, or a ``str_replace``, is refused unless the newest
read of that path carries the file's current hash: the model must not overwrite work it
has not seen, nor edit from a stale copy (another tool or the user may have changed it).
Marks live on the messages, so when summarization drops the read, the gate closes again.
Writes do not refresh marks, so consecutive edits of one file need a read in between.
Creating a new file needs no read. The check and the write run under a per-(thread, path)
lock so two parallel calls in one reply cannot both pass on the same stale read.
"""

from __future__ import annotations

import asyncio
import hashlib
import posixpath
import threading
import weakref
from pathlib import Path
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from harness.agents.markers import READ_MARK_KEY, TOOL_META_KEY

READ_TOOLS = frozenset({"read_file"})
WRITE_TOOLS = frozenset({"write_file", "str_replace"})
_ROOTS = {"/mnt/user-data/workspace": "workspace_path", "/mnt/user-data/uploads": "uploads_path", "/mnt/user-data/outputs": "outputs_path"}


def host_path(virtual: str, thread_data: dict[str, str] | None) -> Path | None:
    """Map a virtual user-data path to the host, or None when it is outside those roots."""
    if not thread_data or not isinstance(virtual, str):
        return None
    norm = posixpath.normpath(virtual)
    for root, key in _ROOTS.items():
        if (norm == root or norm.startswith(root + "/")) and thread_data.get(key):
            base = Path(thread_data[key]).resolve()
            target = (base / norm[len(root):].lstrip("/")).resolve()
            return target if target == base or base in target.parents else None
    return None


def file_hash(path: Path | None) -> str | None:
    if path is None or not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()


def _latest_mark(messages: list[Any], path: str) -> str | None:
    norm = posixpath.normpath(path)
    for m in reversed(messages):
        mark = m.additional_kwargs.get(READ_MARK_KEY) if isinstance(m, ToolMessage) else None
        if mark and posixpath.normpath(mark.get("path", "")) == norm:
            return mark.get("sha256")
    return None


def _refusal(request: Any, path: str, reason: str) -> ToolMessage:
    call = request.tool_call
    return ToolMessage(
        content=f"Error: refused to change {path}: {reason} Read the file with read_file first, then make your change.",
        tool_call_id=call["id"], name=call["name"], status="error",
        additional_kwargs={TOOL_META_KEY: {"status": "error", "error_type": "read_before_write", "recoverable_by_model": True,
                                           "recommended_next_action": "read_file_first"}},
    )


class ReadBeforeWriteMiddleware(AgentMiddleware):
    def __init__(self) -> None:
        super().__init__()
        self._async_locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = weakref.WeakValueDictionary()
        self._sync_locks: weakref.WeakValueDictionary[tuple[str, str], Any] = weakref.WeakValueDictionary()
        self._guard = threading.Lock()

    @staticmethod
    def _key(request: Any, path: str) -> tuple[str, str]:
        data = (request.state or {}).get("thread_data") or {}
        return str(data.get("workspace_path", "")), posixpath.normpath(path)

    def _lock(self, table: Any, key: tuple[str, str], factory: Any) -> Any:
        with self._guard:
            lock = table.get(key)
            if lock is None:
                lock = factory()
                table[key] = lock
            return lock

    def _check(self, request: Any) -> tuple[str, Path | None] | ToolMessage | None:
        name = request.tool_call["name"]
        if name not in READ_TOOLS | WRITE_TOOLS:
            return None
        args = request.tool_call.get("args") or {}
        path = args.get("path") or args.get("file_path")
        if not isinstance(path, str):
            return None
        target = host_path(path, (request.state or {}).get("thread_data"))
        return path, target

    def _gate(self, request: Any, path: str, current: str | None) -> ToolMessage | None:
        if request.tool_call["name"] not in WRITE_TOOLS or current is None:
            return None  # a read, or creating a new file
        seen = _latest_mark((request.state or {}).get("messages") or [], path)
        if seen is None:
            return _refusal(request, path, "it already exists and you have not read it in this conversation.")
        if seen != current:
            return _refusal(request, path, "it changed since you last read it.")
        return None

    def _stamp(self, request: Any, result: Any, path: str, digest: str | None) -> Any:
        if request.tool_call["name"] in READ_TOOLS and isinstance(result, ToolMessage) and result.status != "error" and digest:
            return result.model_copy(update={"additional_kwargs": {**result.additional_kwargs, READ_MARK_KEY: {"path": path, "sha256": digest}}})
        return result

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        checked = self._check(request)
        if checked is None:
            return handler(request)
        path, target = checked
        with self._lock(self._sync_locks, self._key(request, path), threading.Lock):
            before = file_hash(target)
            if refusal := self._gate(request, path, before):
                return refusal
            return self._stamp(request, handler(request), path, before)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        checked = self._check(request)
        if checked is None:
            return await handler(request)
        path, target = checked
        async with self._lock(self._async_locks, self._key(request, path), asyncio.Lock):
            before = await asyncio.to_thread(file_hash, target)
            if refusal := self._gate(request, path, before):
                return refusal
            return self._stamp(request, await handler(request), path, before)
