"""Manual compaction of a thread's context: the summarization middleware's own summary and
cut point (a tool call and its results are never split), forced instead of triggered.
Also a rough measure of how much of the model's window a thread's context fills."""

from __future__ import annotations

from typing import Any

from langchain_core.messages.utils import count_tokens_approximately

from harness.agents.middlewares.summarization import DeerFlowSummarizationMiddleware
from harness.config import AppConfig
from harness.models import create_chat_model, get_model_config

DEFAULT_CONTEXT_WINDOW = 128_000


def compaction_model_name(app: AppConfig, run_model: str | None) -> str:
    """The summarization model when one is set, else the thread's model, else the first."""
    return get_model_config(app.summarization.model_name or run_model or None, config=app).name


def build_compactor(app: AppConfig, run_model: str | None) -> DeerFlowSummarizationMiddleware:
    """Blocking (builds a model client): call it off the event loop."""
    model = create_chat_model(compaction_model_name(app, run_model), config=app)
    keep = app.summarization.keep
    return DeerFlowSummarizationMiddleware(model, keep=(keep.type, keep.value))


async def compact(compactor: DeerFlowSummarizationMiddleware, values: dict[str, Any]) -> dict[str, Any] | None:
    return await compactor.acompact(values)


def context_usage(app: AppConfig, run_model: str | None, values: dict[str, Any]) -> dict[str, Any]:
    """Approximate tokens of what the next model request carries (messages + summary)."""
    entry = get_model_config(run_model or None, config=app)
    messages = list(values.get("messages") or [])
    used = count_tokens_approximately(messages) if messages else 0
    summary = values.get("summary_text") or ""
    if summary:
        used += len(summary) // 4
    window = entry.context_window or DEFAULT_CONTEXT_WINDOW
    return {"model_name": entry.name, "used_tokens": used, "context_window": window,
            "percent": round(100 * used / window, 1) if window else None, "message_count": len(messages),
            "has_summary": bool(summary), "keep_messages": app.summarization.keep.value if app.summarization.keep.type == "messages" else None}
