"""``additional_kwargs.deerflow_seq``: where a checkpoint message sits in the thread's journal.

A client shows a thread by merging two sources: the checkpoint (``values`` frames, ``GET /state``,
``POST /history``) and the journal's message feed (``/messages/page``, ordered by the thread-global
``seq``). The checkpoint has no order of its own beyond its list, and after a compaction or a
replay that list no longer lines up with the feed, so a client placing messages by their
neighbours duplicates or misorders them after a reload. Stamping each checkpoint message with the
``seq`` of its journal row lets the client place it exactly (DeerFlow #4666).

Both sides must agree on what "the same message" is: a tool result is its ``tool_call_id`` (the id
both sides always have), anything else its ``id``. The stamp is added to a copy when the state is
serialized for a client; the checkpoint itself never holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.agents.markers import MESSAGE_SEQ_KEY

__all__ = ["MESSAGE_SEQ_KEY", "message_identity", "stamp_messages", "strip_message_seq"]


def message_identity(message: Any) -> str | None:
    """The identity of a serialized message (a dict as journaled or as sent in ``values``)."""
    if not isinstance(message, Mapping):
        return None
    tool_call_id = message.get("tool_call_id")
    if isinstance(tool_call_id, str) and tool_call_id:
        return f"tool:{tool_call_id}"
    message_id = message.get("id")
    if isinstance(message_id, str) and message_id:
        return f"message:{message_id}"
    return None


def identities(messages: Iterable[Any]) -> list[str | None]:
    return [message_identity(m) for m in messages]


def stamp_messages(messages: list, seqs: Mapping[str, int], known: list[str | None] | None = None) -> list:
    """``messages`` with the journal ``seq`` of each one ``seqs`` knows. Stamped messages are
    copies (their ``additional_kwargs`` too: serialized messages share it with a cache); the
    others are the same objects. ``known``: their identities, when the caller has them already."""
    if not seqs:
        return messages
    out = []
    for message, identity in zip(messages, known if known is not None else identities(messages)):
        seq = seqs.get(identity) if identity is not None else None
        if seq is None:
            out.append(message)
        else:
            kwargs = message.get("additional_kwargs")
            out.append({**message, "additional_kwargs": {**(kwargs if isinstance(kwargs, Mapping) else {}), MESSAGE_SEQ_KEY: seq}})
    return out


def strip_message_seq(messages: Any) -> None:
    """Drop the stamp from messages a client sent back (in place: the caller's own copy)."""
    if not isinstance(messages, list):
        return
    for message in messages:
        kwargs = message.get("additional_kwargs") if isinstance(message, dict) else None
        if isinstance(kwargs, dict):
            kwargs.pop(MESSAGE_SEQ_KEY, None)
