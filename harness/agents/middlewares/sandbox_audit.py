"""SandboxAudit: every shell and file tool call leaves an audit record.

A call is audited when its tool declares that it reads or writes the thread's files
(``harness.tools.file_access``: the sandbox tools, ``present_files``, ``view_image``, and any
tool declared the same way). The record says who (user), where (thread, run), what (tool, the
command's SHA-256 and a bounded preview, the paths named in the arguments) and how it ended.
It goes to the store installed with ``harness.sandbox.audit.set_audit_store``; with none
installed (the embedded client) the middleware passes calls straight through. Under async runs
the store is called in a worker thread, after the call, so the trail never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from harness.agents.markers import run_value
from harness.sandbox.audit import PREVIEW_CHARS, SandboxAuditRecord, audit_enabled, get_audit_store
from harness.tools.file_access import thread_file_access

logger = logging.getLogger(__name__)

# Argument keys whose values are file content, not a description of the operation.
_CONTENT_KEYS = frozenset({"content", "new_str", "old_str", "new_string", "old_string"})
_PATH_KEYS = frozenset({"path", "paths", "filepath", "filepaths", "image_path", "file_path", "directory"})


# Virtual paths inside a shell command (the sandbox's view: /mnt/user-data, /mnt/skills).
_COMMAND_PATH = re.compile(r"/mnt/[^\s'\";|&<>()`$]+")


def _paths(args: dict[str, Any]) -> list[str]:
    found: list[str] = []
    command = args.get("command")
    if isinstance(command, str):
        found.extend(dict.fromkeys(p[:512] for p in _COMMAND_PATH.findall(command[:20000])))
    for key, value in args.items():
        if key == "command":
            continue
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, str) and (key in _PATH_KEYS or v.startswith("/mnt/")) and v not in found:
                found.append(v[:512])
    return found[:32]


def _outcome(result: Any) -> str:
    messages = [result] if isinstance(result, ToolMessage) else []
    if isinstance(result, Command) and isinstance(result.update, dict):
        messages = [m for m in result.update.get("messages") or [] if isinstance(m, ToolMessage)]
    return "error" if any(m.status == "error" for m in messages) else "success"


def build_record(request: Any, access: str, outcome: str, duration_ms: int) -> SandboxAuditRecord:
    call = request.tool_call
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    command = args.get("command")
    if isinstance(command, str):
        subject = command
    else:
        subject = json.dumps({k: v for k, v in args.items() if k not in _CONTENT_KEYS}, sort_keys=True, default=str)
    runtime = request.runtime

    def ident(key: str) -> str:
        value = run_value(runtime, key)
        return "" if value is None else str(value)[:64]

    return SandboxAuditRecord(
        tool=str(call.get("name") or "")[:128], access=access, digest=hashlib.sha256(subject.encode()).hexdigest(),
        preview=subject[:PREVIEW_CHARS], paths=_paths(args), outcome=outcome, tool_call_id=str(call.get("id") or "")[:128],
        thread_id=ident("thread_id"), run_id=ident("run_id"), user_id=ident("user_id"), duration_ms=duration_ms)


def _store(records: list[SandboxAuditRecord]) -> None:
    # The trail must never cost the user the tool's result.
    try:
        get_audit_store().record(records)
    except Exception:
        logger.warning("sandbox audit record could not be stored", exc_info=True)


class SandboxAuditMiddleware(AgentMiddleware):
    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        access = thread_file_access(request.tool) if audit_enabled() else None
        if access is None:
            return handler(request)
        started = time.monotonic()
        outcome = "error"
        try:
            result = handler(request)
            outcome = _outcome(result)
            return result
        finally:
            _store([build_record(request, access, outcome, int((time.monotonic() - started) * 1000))])

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        access = thread_file_access(request.tool) if audit_enabled() else None
        if access is None:
            return await handler(request)
        started = time.monotonic()
        outcome = "error"
        try:
            result = await handler(request)
            outcome = _outcome(result)
            return result
        finally:
            record = build_record(request, access, outcome, int((time.monotonic() - started) * 1000))
            await asyncio.to_thread(_store, [record])
