"""The ``messages`` reducer of delta checkpoint mode.

In delta mode LangGraph stores each step's message writes instead of the whole list and
rebuilds the list by replaying them, in batches that need not match the steps that wrote
them. So the reducer must be deterministic and give the same list however the writes are
batched. ``add_messages`` is neither: it gives id-less messages a random id (a replay would
give them new ones, and clients key messages by id) and it is quadratic when folded write
by write. This fold keeps ``add_messages``' meaning for each write — replace by id in
place, ``RemoveMessage`` (an unknown id is an error), ``REMOVE_ALL_MESSAGES`` — applies
writes in order as the steps did, and runs in time linear in the list plus the writes.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk, RemoveMessage, convert_to_messages, message_chunk_to_message
from langgraph.graph.message import REMOVE_ALL_MESSAGES

# Ids given to id-less messages derive from the message before them, so a replay gives
# the same ids and two id-less messages in a row still differ.
_ID_NAMESPACE = uuid.UUID("5b0f6c1e-3d4a-4f7e-9a51-0d6c2f8b7e13")


def _as_messages(write: Any) -> list[BaseMessage]:
    items = write if isinstance(write, list) else [write]
    if all(isinstance(m, BaseMessage) and not isinstance(m, BaseMessageChunk) for m in items):
        return items
    return [message_chunk_to_message(m) if isinstance(m, BaseMessageChunk) else m for m in convert_to_messages(items)]


# The last lists this reducer returned, each with a copy and its id -> position index.
# LangGraph hands such a list (or a copy of it) back as a later write's state; on a long thread,
# rebuilding the index was most of what a one-message write cost. The copy is what a state must
# equal, object for object, for the index to be reused, so a list changed in place is not
# mistaken for it. A step's own write and a branch's look at it alternate, hence a few entries.
_recent: deque[tuple[list[BaseMessage], dict[str, int]]] = deque(maxlen=4)


def _index(state: list[BaseMessage]) -> dict[str, int]:
    if state:
        for copy, index in list(_recent):
            if len(copy) == len(state) and copy[-1] is state[-1] and copy == state:
                return dict(index)
    return {m.id: i for i, m in enumerate(state)}


def merge_message_writes(state: Sequence[BaseMessage] | None, writes: Sequence[Any]) -> list[BaseMessage]:
    merged: list[BaseMessage | None] = list(state or [])
    position = _index(merged)  # type: ignore[arg-type]
    last_live = len(merged) - 1
    holes = False
    for write in writes:
        if write is None:
            raise ValueError("a messages write of None is not allowed")
        while last_live >= 0 and merged[last_live] is None:
            last_live -= 1
        anchor = merged[last_live].id if last_live >= 0 else ""
        # Copies, never the write's own objects: LangGraph also folds one task's writes alone
        # (a tool's view of the state), and an id set there would stick to the write.
        messages = [m if m.id is not None else m.model_copy(update={
            "id": str(uuid.uuid5(_ID_NAMESPACE, f"{anchor}|{k}|{m.type}|{getattr(m, 'tool_call_id', '')}"))})
            for k, m in enumerate(_as_messages(write))]
        cut = max((i for i, m in enumerate(messages) if isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES),
                  default=None)
        if cut is not None:
            merged = list(messages[cut + 1:])
            position = {m.id: i for i, m in enumerate(merged)}
            last_live = len(merged) - 1
            holes = False
            continue
        removed: set[str] = set()
        for m in messages:
            at = position.get(m.id)
            if at is not None:
                if isinstance(m, RemoveMessage):
                    removed.add(m.id)
                else:
                    removed.discard(m.id)
                    merged[at] = m
            elif isinstance(m, RemoveMessage):
                raise ValueError(f"Attempting to delete a message with an ID that doesn't exist ('{m.id}')")
            else:
                position[m.id] = len(merged)
                merged.append(m)
        for mid in removed:  # tombstones until the end: positions stay valid meanwhile
            merged[position.pop(mid)] = None
            holes = True
        last_live = len(merged) - 1
    if holes:
        return [m for m in merged if m is not None]
    _recent.append((list(merged), position))  # type: ignore[arg-type]
    return merged  # type: ignore[return-value]
