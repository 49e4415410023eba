"""The thread's state around a run: what it was before (for rollback and for telling this
run's messages from older ones), a fork turned into a linear write in delta mode, and the
rollback itself. harness/runtime/checkpoint_state.py says why delta mode needs this."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from harness.runtime.checkpoint_state import ensure_readable, graph_mode, materialized_values, write_onto_head

logger = logging.getLogger(__name__)


class ForkNeedsInput(ValueError):
    pass


@dataclass
class PreRun:
    config: dict | None = None  # the head checkpoint before the run; None for a new thread
    values: dict[str, Any] | None = None
    message_ids: set[str] = field(default_factory=set)


def _ids(messages: Any) -> set[str]:
    return {m.id for m in messages or () if getattr(m, "id", None)}


async def prepare(graph: Any, config: dict, graph_input: Any) -> PreRun:
    """Check the thread can be read in this mode and read its pre-run state. A run from an
    older checkpoint in delta mode first makes that checkpoint's state the head's, and
    ``config`` loses its checkpoint id (it is changed in place)."""
    conf = config["configurable"]
    thread_id = conf["thread_id"]
    saver = graph.checkpointer
    target = await saver.aget_tuple(config)
    if target is None:
        return PreRun()
    mode = graph_mode(graph)
    ensure_readable(target, mode, thread_id)
    if mode == "delta" and conf.get("checkpoint_id"):
        head = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        if head is not None and head.config["configurable"]["checkpoint_id"] != conf["checkpoint_id"]:
            snapshot = await graph.aget_state(config)
            if snapshot.next and graph_input is None:
                raise ForkNeedsInput(
                    "In delta checkpoint mode a run from an older checkpoint must send input (or a command); "
                    "re-running that checkpoint's pending steps is not supported")
            await write_onto_head(graph, config, dict(snapshot.values or {}))
            conf.pop("checkpoint_id", None)
            conf.pop("checkpoint_map", None)
            target = await saver.aget_tuple(config)
    stored = (target.checkpoint.get("channel_values") or {}).get("messages")
    if isinstance(stored, list):  # full mode, or a checkpoint that holds the whole list
        return PreRun(config=target.config, values=None, message_ids=_ids(stored))
    values = await materialized_values(graph, config)
    return PreRun(config=target.config, values=values, message_ids=_ids((values or {}).get("messages")))


async def rollback(graph: Any, thread_id: str, pre: PreRun) -> None:
    """Make the state from before the run the thread's head again."""
    try:
        if pre.config is None:
            # The thread had no state before this run: remove what the run wrote.
            await graph.checkpointer.adelete_thread(thread_id)
        elif graph_mode(graph) == "delta":
            values = pre.values if pre.values is not None else await materialized_values(graph, pre.config)
            await write_onto_head(graph, pre.config, values or {})
        else:
            await graph.aupdate_state(pre.config, None, as_node="__copy__")
    except Exception:
        logger.exception("Rollback of thread %s failed", thread_id)
