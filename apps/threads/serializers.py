"""Wire shapes of threads (LangGraph Platform's Thread)."""

from __future__ import annotations

from apps.threads.models import Thread


def thread_json(thread: Thread, *, values: dict | None = None, snippet: str = "", listed: bool = False) -> dict:
    """``listed``: a thread of a search page, whose metadata the search cut to what a list
    carries (``apps/threads/metadata.py``); ``metadata_truncated`` says when it did."""
    data = {
        "thread_id": thread.pk,
        "created_at": thread.created_at.isoformat(),
        "updated_at": thread.updated_at.isoformat(),
        "metadata": thread.list_metadata if listed else thread.metadata,
        "status": thread.status,
        "values": values if values is not None else {},
        "interrupts": {},
        "title": thread.title,
        # Which agent the thread talks to (the chat shows it); "" on threads from before agents.
        "assistant_id": thread.assistant_id or "lead_agent",
        # DeerFlow's: when the thread was pinned (null: not pinned).
        "pinned_at": thread.pinned_at.isoformat() if thread.pinned_at else None,
        # The owner's tags on this chat, by name (a search page read them with its rows).
        "tags": thread.tag_names if hasattr(thread, "tag_names") else [tag.name for tag in thread.tags.all()],
    }
    if snippet:  # a search that matched the thread's messages: the passage that did
        data["search_snippet"] = snippet
    if listed and thread.metadata_truncated:  # GET /threads/{id} has the whole of it
        data["metadata_truncated"] = True
    return data
