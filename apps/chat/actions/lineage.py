"""Where a run sits in a thread's checkpoints: the state just before it and just after it.

Checkpoints a run writes carry its ``run_id`` in their metadata (LangGraph copies the run
config's metadata there). Walking the head's ancestry by ``parent_config`` — never the
global checkpoint order, which mixes in abandoned siblings of full-mode forks — finds the
run's checkpoints; the first older one is the state before it. Rewinds are written onto the
head (harness/runtime/checkpoint_state.py), so their checkpoints name no run and read as
"before" the run that follows them, which is what they are.

A run with no checkpoint of its own (a branch's seeded turns) falls back to the head's
messages cut at the run's first (or after its last) journaled message.
"""

from __future__ import annotations

from typing import Any

from apps.errors import Conflict
from apps.runs import graphs

# Channels bound to the thread that wrote them: a branch gets its own sandbox and paths.
THREAD_BOUND_CHANNELS = frozenset({"sandbox", "thread_data"})


async def ancestry(saver: Any, thread_id: str) -> list[Any]:
    """The head's checkpoint tuples, newest first, following parent links."""
    config = graphs.thread_config(thread_id)
    by_id = {t.config["configurable"]["checkpoint_id"]: t async for t in saver.alist(config)}
    head = await saver.aget_tuple(config)
    chain: list[Any] = []
    seen: set[str] = set()
    while head is not None:
        cid = head.config["configurable"]["checkpoint_id"]
        if cid in seen:  # a cycle would be corrupt storage: stop rather than loop
            break
        seen.add(cid)
        chain.append(head)
        parent = ((head.parent_config or {}).get("configurable") or {}).get("checkpoint_id")
        head = by_id.get(parent) if parent else None
    return chain


def _run_of(tup: Any) -> str | None:
    return (tup.metadata or {}).get("run_id")


async def _values_at(graph: Any, tup: Any) -> dict[str, Any]:
    snapshot = await graph.aget_state(tup.config)
    return dict(snapshot.values or {})


def _cut(messages: list, run_message_ids: set[str], *, before: bool) -> list | None:
    indexes = [i for i, m in enumerate(messages) if getattr(m, "id", None) in run_message_ids]
    if not indexes:
        return None
    return list(messages[: indexes[0]]) if before else list(messages[: indexes[-1] + 1])


async def head_values(graph: Any, thread_id: str) -> tuple[str | None, dict[str, Any]]:
    """(head checkpoint id, its values); (None, {}) for a thread without state."""
    tup = await graph.checkpointer.aget_tuple(graphs.thread_config(thread_id))
    if tup is None:
        return None, {}
    return tup.config["configurable"]["checkpoint_id"], await _values_at(graph, tup)


async def values_before_run(graph: Any, thread_id: str, run_id: str, run_message_ids: set[str]) -> dict[str, Any]:
    """The thread's state just before ``run_id`` (``{}`` when it was the thread's first)."""
    chain = await ancestry(graph.checkpointer, thread_id)
    found = False
    for tup in chain:
        if _run_of(tup) == run_id:
            found = True
        elif found:
            return await _values_at(graph, tup)
    if found:
        return {}
    if not chain:
        raise Conflict(f"Thread {thread_id} has no state to rewind")
    values = await _values_at(graph, chain[0])
    messages = _cut(list(values.get("messages") or []), run_message_ids, before=True)
    if messages is None:
        raise Conflict(f"Run {run_id}'s messages are no longer in the thread's state (compacted?); it cannot be replayed")
    return {**values, "messages": messages}


async def values_after_run(graph: Any, thread_id: str, run_id: str, run_message_ids: set[str]) -> dict[str, Any]:
    """The thread's state as ``run_id`` left it."""
    chain = await ancestry(graph.checkpointer, thread_id)
    for tup in chain:
        if _run_of(tup) == run_id:
            return await _values_at(graph, tup)
    if not chain:
        raise Conflict(f"Thread {thread_id} has no state to branch from")
    values = await _values_at(graph, chain[0])
    messages = _cut(list(values.get("messages") or []), run_message_ids, before=False)
    if messages is None:
        raise Conflict(f"Run {run_id}'s messages are no longer in the thread's state (compacted?); it cannot be branched from")
    return {**values, "messages": messages}
