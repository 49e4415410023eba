"""Turn tool exceptions into error results the model can act on.

Without this an exception inside a tool aborts the whole run. Every tool result also
gets ``additional_kwargs["deerflow_tool_meta"]``: ``status``, ``error_type``,
``recoverable_by_model`` and ``recommended_next_action``, so the UI and later guards can
tell a typo in a path (the model can fix it) from a broken integration (it cannot).
"""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from pydantic import ValidationError

from harness.agents.markers import TOOL_META_KEY
from harness.agents.middlewares._base import map_tool_messages

# exception class -> (error_type, recoverable_by_model, recommended_next_action)
_CLASSIFY: list[tuple[tuple[type[BaseException], ...], str, bool, str]] = [
    ((FileNotFoundError,), "not_found", True, "check_path"),
    ((IsADirectoryError, NotADirectoryError), "wrong_kind_of_path", True, "check_path"),
    ((PermissionError,), "permission", True, "use_allowed_paths"),
    ((ValidationError, ValueError, TypeError, KeyError), "invalid_arguments", True, "fix_arguments"),
    ((TimeoutError, asyncio.TimeoutError, subprocess.TimeoutExpired), "timeout", True, "retry_smaller"),
    ((ConnectionError,), "network", False, "report_to_user"),
]


def classify(exc: BaseException) -> dict[str, Any]:
    for types, kind, recoverable, action in _CLASSIFY:
        if isinstance(exc, types):
            return {"status": "error", "error_type": kind, "recoverable_by_model": recoverable, "recommended_next_action": action}
    return {"status": "error", "error_type": "internal", "recoverable_by_model": False, "recommended_next_action": "report_to_user"}


def _meta_for(msg: ToolMessage, tool_known: bool) -> dict[str, Any]:
    if msg.status != "error":
        return {"status": "success"}
    if not tool_known:
        return {"status": "error", "error_type": "unknown_tool", "recoverable_by_model": True, "recommended_next_action": "use_listed_tool"}
    return {"status": "error", "error_type": "tool_reported_error", "recoverable_by_model": True, "recommended_next_action": "read_error"}


def _stamp(msg: ToolMessage, meta: dict[str, Any]) -> ToolMessage:
    if TOOL_META_KEY in msg.additional_kwargs:
        return msg
    return msg.model_copy(update={"additional_kwargs": {**msg.additional_kwargs, TOOL_META_KEY: meta}})


def error_result(request: Any, exc: BaseException) -> ToolMessage:
    call = request.tool_call
    meta = {**classify(exc), "exception": type(exc).__name__}
    text = str(exc).strip() or type(exc).__name__
    hint = "You can correct the call and try again." if meta["recoverable_by_model"] else "This is not something a different call will fix; tell the user."
    return ToolMessage(
        content=f"Error: `{call['name']}` failed ({type(exc).__name__}): {text[:4000]}\n{hint}",
        tool_call_id=call["id"], name=call["name"], status="error",
        additional_kwargs={TOOL_META_KEY: meta},
    )


class ToolErrorHandlingMiddleware(AgentMiddleware):
    def _finish(self, request: Any, result: Any) -> Any:
        known = request.tool is not None
        return map_tool_messages(result, lambda m: _stamp(m, _meta_for(m, known)))

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        try:
            return self._finish(request, handler(request))
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return error_result(request, exc)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        try:
            return self._finish(request, await handler(request))
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return error_result(request, exc)
