"""Events a middleware asks the run's journal to keep, carried on the ``custom`` stream.

The harness cannot write ``RunEvent`` rows (it knows no Django), so a middleware that makes
a change worth auditing (a skill activated, its secrets bound or missing) writes one
``custom`` event of this shape; the worker turns it into a ``middleware:<tag>`` row of
category ``middleware`` (DeerFlow's ``record_middleware`` shape: ``{name, hook, action,
changes}``), and a client streaming ``custom`` sees it too. Content is names and paths only,
never secret values or file contents.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer

TYPE = "middleware_event"
PREFIX = "middleware:"
MAX_EVENT_TYPE = 32  # RunEvent.event_type's width


def emit(tag: str, *, name: str, hook: str, action: str, changes: dict[str, Any]) -> None:
    """Write the event on the run's ``custom`` stream; a no-op outside a graph run."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # outside a graph (a direct call in a test)
        return
    writer({"type": TYPE, "tag": tag, "content": {"name": name, "hook": hook, "action": action, "changes": changes}})


def as_journal(data: Any) -> tuple[str, str, dict] | None:
    """(event_type, category, content) for a ``custom`` payload of this shape, else None."""
    if not isinstance(data, dict) or data.get("type") != TYPE:
        return None
    tag, content = data.get("tag"), data.get("content")
    if not isinstance(tag, str) or not tag or len(PREFIX) + len(tag) > MAX_EVENT_TYPE or not isinstance(content, dict):
        return None
    return PREFIX + tag, "middleware", content
