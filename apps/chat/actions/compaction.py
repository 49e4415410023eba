"""``POST /threads/{id}/compact``: summarize older context into ``summary_text`` and keep the
recent window, written onto the head (both checkpoint modes); ``GET /threads/{id}/context``:
how much of the model's window the thread's context fills.

The visible history is the journal and does not change: compaction changes only what the
model is shown from now on.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from apps.chat.actions import lineage
from apps.errors import Conflict, ServiceUnavailable, ThreadBusy
from apps.runs import graphs
from apps.runs.reservations import Kind as ReservationKind, thread_reserved
from apps.runs.selectors import thread_latest_model
from apps.runs.runtime import get_runtime
from harness.agents import compaction
from harness.config.loader import get_app_config
from harness.models import ModelError
from harness.observability.tracing import atraced, standalone_config
from harness.runtime.checkpoint_state import write_onto_head

logger = logging.getLogger(__name__)


def _run_model(thread) -> str | None:
    return thread_latest_model(thread_id=thread.pk)


def _config(thread) -> dict:
    return graphs.thread_config(thread.pk, user_id=str(thread.owner_id), assistant_id=thread.assistant_id or graphs.LEAD_AGENT)


async def _head(thread) -> tuple[Any, str | None, dict]:
    config = _config(thread)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    head_id, values = await lineage.head_values(graph, thread.pk)
    return graph, head_id, values


async def _compact(thread, run_model: str | None) -> dict:
    graph, head_id, values = await _head(thread)
    if head_id is None:
        raise Conflict(f"Thread {thread.pk} has no messages to compact")
    app = get_app_config()
    try:
        compactor = await asyncio.to_thread(compaction.build_compactor, app, run_model)
    except ModelError as exc:
        raise ServiceUnavailable(f"No model to summarize with: {exc}") from None
    # Its own trace in the thread's session (making a tracer client may touch the disk: off the loop).
    trace = await asyncio.to_thread(standalone_config, app.tracing, "context_compaction", thread_id=thread.pk,
                                    user_id=str(thread.owner_id), model_name=compaction.compaction_model_name(app, run_model))
    try:
        result = await atraced(trace, lambda: compaction.compact(compactor, values))
    except Exception as exc:  # the model call failed: nothing was written
        logger.warning("Compaction of thread %s failed: %s", thread.pk, exc)
        raise ServiceUnavailable(f"The summary could not be made: {type(exc).__name__}: {exc}") from None
    if result is None:
        keep = app.summarization.keep
        raise Conflict(f"Thread {thread.pk} is too short to compact: it fits in the kept window ({keep.value} {keep.type})")
    head_now = (await graph.checkpointer.aget_tuple(_config(thread))).config["configurable"]["checkpoint_id"]
    if head_now != head_id:
        raise ThreadBusy(f"Thread {thread.pk} changed while it was being compacted; try again")
    new_config = await write_onto_head(graph, _config(thread), {**values, "messages": result["messages"], "summary_text": result["summary_text"]})
    usage = compaction.context_usage(app, run_model, {**values, "messages": result["messages"], "summary_text": result["summary_text"]})
    return {"thread_id": thread.pk, "summary_text": result["summary_text"], "summarized_messages": result["summarized"],
            "kept_messages": len(result["messages"]), "checkpoint_id": new_config["configurable"]["checkpoint_id"], "context_usage": usage}


def thread_compact(*, thread) -> dict:
    # Held from reading the head to writing the compacted one: a run admitted meanwhile
    # would start from a head about to be replaced, and its turn would be lost.
    with thread_reserved(thread=thread, kind=ReservationKind.CHECKPOINT_WRITE,
                         run_busy_detail=f"Thread {thread.pk} has an active run; compact it once the run has finished"):
        return get_runtime().call(_compact, thread, _run_model(thread), timeout=180)


async def _usage(thread, run_model: str | None) -> dict:
    _, _, values = await _head(thread)
    return compaction.context_usage(get_app_config(), run_model, values)


def thread_context_usage(*, thread) -> dict:
    try:
        return {"thread_id": thread.pk, **get_runtime().call(_usage, thread, _run_model(thread))}
    except ModelError as exc:
        raise ServiceUnavailable(str(exc)) from None
