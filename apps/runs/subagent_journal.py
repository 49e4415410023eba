"""Subagent progress from the lead's ``custom`` stream, as durable run events.

The ``task`` tool reports each subagent through ``custom`` events (API_CONTRACT §2); the
worker hands every root-namespace one here. They become ``subagent.start|step|end`` rows
(§5, bounded text: the full transcript stays out of the journal) and the subagent's usage
is added to the run's per-model usage, so console and budgets count it.
"""

from __future__ import annotations

from typing import Any

from apps.runs.journal import JournalEvent, RunProgress

TEXT_CHARS = 4000
_END_TYPES = {"task_completed", "task_failed", "task_cancelled", "task_timed_out"}
_STATUS = {"task_completed": "completed", "task_failed": "failed", "task_cancelled": "cancelled", "task_timed_out": "timed_out"}


def _bounded(text: Any) -> tuple[str, bool]:
    text = "" if text is None else str(text)
    return (text, False) if len(text) <= TEXT_CHARS else (text[:TEXT_CHARS] + "…", True)


def subagent_events(data: Any, progress: RunProgress) -> list[JournalEvent]:
    if not isinstance(data, dict):
        return []
    kind, task_id = data.get("type"), data.get("task_id")
    if not task_id or not isinstance(kind, str):
        return []
    meta = {"task_id": task_id}
    if kind == "task_started":
        content = {"task_id": task_id, "description": str(data.get("description") or "")[:500],
                   "subagent_type": data.get("subagent_type"), "model_name": data.get("model_name")}
        progress.open_tasks[task_id] = str(data.get("model_name") or "")
        return [JournalEvent("subagent.start", "subagent", content, meta)]
    if kind == "task_running":
        step = dict(data.get("step") or {})
        index = int(step.get("message_index") or data.get("message_index") or 0)
        text, cut = _bounded(step.get("text"))
        content = {"task_id": task_id, "message_index": index, "kind": step.get("kind") or "ai", "text": text,
                   "truncated": cut or bool(step.get("truncated")), "usage": data.get("usage")}
        if content["kind"] == "ai":
            content["tool_calls"] = step.get("tool_calls") or []
        else:
            content["tool_name"] = step.get("tool_name") or ""
        return [JournalEvent("subagent.step", "subagent", content, {**meta, "message_index": index})]
    if kind in _END_TYPES:
        progress.open_tasks.pop(task_id, None)
        usage = data.get("usage") or {}
        model = data.get("model_name") or "unknown"
        if usage.get("calls"):
            progress.add_subagent_usage(model, usage)
        content: dict[str, Any] = {"task_id": task_id, "status": _STATUS[kind], "model_name": model, "usage": usage,
                                   "stop_reason": data.get("stop_reason")}
        for key in ("result", "error"):
            if data.get(key):
                content[key], content[f"{key}_truncated"] = _bounded(data[key])
        return [JournalEvent("subagent.end", "subagent", content, meta)]
    return []


def cancelled_ends(progress: RunProgress, reason: str) -> list[JournalEvent]:
    """``subagent.end`` for subagents a cancelled run left open: their own end events die
    with the run's stream, and a reload must not show them as still running."""
    events = [JournalEvent("subagent.end", "subagent", {"task_id": task_id, "status": "cancelled", "model_name": model or None,
                                                         "error": reason}, {"task_id": task_id})
              for task_id, model in progress.open_tasks.items()]
    progress.open_tasks.clear()
    return events
