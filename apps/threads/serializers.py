"""Wire shapes of threads (LangGraph Platform's Thread)."""

from __future__ import annotations

from apps.threads.models import Thread


def thread_json(thread: Thread, *, values: dict | None = None) -> dict:
    return {
        "thread_id": thread.pk,
        "created_at": thread.created_at.isoformat(),
        "updated_at": thread.updated_at.isoformat(),
        "metadata": thread.metadata,
        "status": thread.status,
        "values": values if values is not None else {},
        "interrupts": {},
        "title": thread.title,
        # Which agent the thread talks to (the chat shows it); "" on threads from before agents.
        "assistant_id": thread.assistant_id or "lead_agent",
    }
