"""The thread's state around a run: the checkpoint-mode check, what the state was before
(for rollback and for telling this run's messages from older ones), and the rollback."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from harness.runtime.checkpoint_state import ensure_readable, graph_mode, materialized_values

logger = logging.getLogger(__name__)


@dataclass
class PreRun:
    config: dict | None = None  # the head checkpoint before the run; None for a new thread
    message_ids: set[str] = field(default_factory=set)


def _ids(messages: Any) -> set[str]:
    return {m.id for m in messages or () if getattr(m, "id", None)}


async def prepare(graph: Any, config: dict) -> PreRun:
    """Check the thread can be read in this mode and read its pre-run state (at the run's
    checkpoint when it names one: LangGraph forks from there, in either mode)."""
    conf = config["configurable"]
    target = await graph.checkpointer.aget_tuple(config)
    if target is None:
        return PreRun()
    ensure_readable(target, graph_mode(graph), conf["thread_id"])
    stored = (target.checkpoint.get("channel_values") or {}).get("messages")
    if isinstance(stored, list):  # full mode, or a checkpoint that holds the whole list
        return PreRun(config=target.config, message_ids=_ids(stored))
    values = await materialized_values(graph, config)
    return PreRun(config=target.config, message_ids=_ids((values or {}).get("messages")))


async def rollback(graph: Any, thread_id: str, pre: PreRun) -> None:
    """Make the state from before the run the thread's head again."""
    try:
        if pre.config is None:
            # The thread had no state before this run: remove what the run wrote.
            await graph.checkpointer.adelete_thread(thread_id)
        else:
            await graph.aupdate_state(pre.config, None, as_node="__copy__")
    except Exception:
        logger.exception("Rollback of thread %s failed", thread_id)
