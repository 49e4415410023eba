"""The thread's state around a run: the checkpoint-mode check, what the state was before
(for rollback and for telling this run's messages from older ones), and the rollback."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import Command

from harness.runtime.checkpoint_state import ensure_readable, graph_mode, materialized_values

logger = logging.getLogger(__name__)


@dataclass
class PreRun:
    config: dict | None = None  # the head checkpoint before the run; None for a new thread
    message_ids: set[str] = field(default_factory=set)
    # The run's first values event is the state before the run plus its input: the older
    # messages' ids come from there instead of a read of the whole thread now.
    ids_from_first_values: bool = False
    input_count: int = 0


def _input_count(graph_input: Any) -> int | None:
    """How many messages the input appends; None when the run's first values event would
    not be the pre-run state plus them (no input: pending steps run first)."""
    if isinstance(graph_input, Command):
        return 0
    if not isinstance(graph_input, dict):
        return None
    messages = graph_input.get("messages")
    if messages is None:
        return 0
    return len(messages) if isinstance(messages, list) else 1


def older_messages(values: dict, pre: PreRun) -> list:
    messages = list(values.get("messages") or [])
    return messages[: max(0, len(messages) - pre.input_count)]


def _ids(messages: Any) -> set[str]:
    return {m.id for m in messages or () if getattr(m, "id", None)}


async def prepare(graph: Any, config: dict, graph_input: Any = None) -> PreRun:
    """Check the thread can be read in this mode and read its pre-run state (at the run's
    checkpoint when it names one: LangGraph forks from there, in either mode)."""
    conf = config["configurable"]
    checkpointer = graph.checkpointer
    target = await checkpointer.aget_tuple(config)
    if target is not None:
        ensure_readable(target, graph_mode(graph), conf["thread_id"])
    prime = getattr(checkpointer, "prime", None)
    if prime is not None:  # LangGraph reads the same head again as the run starts
        prime(config, target)
    if target is None:
        return PreRun()
    stored = (target.checkpoint.get("channel_values") or {}).get("messages")
    count = _input_count(graph_input)
    if count is not None:
        return PreRun(config=target.config, ids_from_first_values=True, input_count=count)
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
