"""Thread state through the LangGraph checkpointer: get, update, history, delete.

The work runs on the runs loop, where the checkpointer lives; the graph is built with the
thread owner's config so channels and reducers are the agent's own. When the graph cannot
be built (no model configured, a broken extension), reads fall back to the raw checkpoint,
which carries the full channel values.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from apps.errors import InvalidRequest, NotFound, ThreadStorageConflict
from apps.runs import graphs
from apps.runs.reservations import Kind, thread_reserved
from apps.runs.runtime import get_runtime
from apps.runs.selectors import message_seqs
from apps.threads.services import thread_title_set
from harness.runtime.checkpoint_state import CheckpointModeMismatch, ensure_readable, graph_mode
from harness.runtime.message_seq import identities, stamp_messages, strip_message_seq
from harness.runtime.serialize import to_jsonable

logger = logging.getLogger(__name__)


def _checkpoint_obj(config: dict | None) -> dict | None:
    if not config:
        return None
    conf = config.get("configurable") or {}
    return {"thread_id": conf.get("thread_id"), "checkpoint_ns": conf.get("checkpoint_ns", ""),
            "checkpoint_id": conf.get("checkpoint_id"), "checkpoint_map": conf.get("checkpoint_map")}


def snapshot_to_json(snapshot: Any) -> dict:
    checkpoint = _checkpoint_obj(snapshot.config)
    parent = _checkpoint_obj(snapshot.parent_config)
    tasks = [
        {"id": t.id, "name": t.name, "path": to_jsonable(getattr(t, "path", ())), "error": str(t.error) if t.error else None,
         "interrupts": to_jsonable(t.interrupts), "checkpoint": None, "state": None, "result": to_jsonable(getattr(t, "result", None))}
        for t in snapshot.tasks
    ]
    return {
        "values": to_jsonable(snapshot.values) if snapshot.values is not None else {},
        "next": list(snapshot.next),
        "tasks": tasks,
        "metadata": to_jsonable(snapshot.metadata or {}),
        "created_at": snapshot.created_at,
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "checkpoint_id": checkpoint["checkpoint_id"] if checkpoint else None,
        "parent_checkpoint_id": parent["checkpoint_id"] if parent else None,
        "interrupts": to_jsonable(getattr(snapshot, "interrupts", ())),
    }


def _tuple_to_json(tup: Any) -> dict:
    checkpoint = tup.checkpoint
    return {
        "values": to_jsonable(checkpoint.get("channel_values") or {}),
        "next": [],
        "tasks": [],
        "metadata": to_jsonable(tup.metadata or {}),
        "created_at": checkpoint.get("ts"),
        "checkpoint": _checkpoint_obj(tup.config),
        "parent_checkpoint": _checkpoint_obj(tup.parent_config),
        "checkpoint_id": (tup.config.get("configurable") or {}).get("checkpoint_id"),
        "parent_checkpoint_id": ((tup.parent_config or {}).get("configurable") or {}).get("checkpoint_id"),
        "interrupts": [],
    }


def _config_for(thread, checkpoint_id: str | None = None) -> dict:
    return graphs.thread_config(thread.pk, checkpoint_id, user_id=str(thread.owner_id), assistant_id=thread.assistant_id or graphs.LEAD_AGENT)


async def _graph_or_none(config: dict) -> Any:
    runtime = get_runtime()
    try:
        return await graphs.build_graph(config, await runtime.checkpointer())
    except Exception as exc:  # reads must keep working when the agent cannot be built
        logger.info("Reading thread state without the agent graph: %s", exc)
        return None


async def _fallback_reader(saver: Any) -> Any:
    """Without the agent graph: the thread-state reader of this checkpoint mode. Full
    checkpoints carry every value, so a raw read suffices there; delta ones must be replayed."""
    reader = await asyncio.to_thread(graphs.state_reader, saver)
    return reader if graph_mode(reader) == "delta" else None


async def _readable(thread, config: dict) -> tuple[Any, Any]:
    """(checkpoint tuple or None, graph or None) after the checkpoint-mode check."""
    saver = await get_runtime().checkpointer()
    tup = await saver.aget_tuple(config)
    if tup is None:
        return None, None
    graph = await _graph_or_none(config) or await _fallback_reader(saver)
    mode = graph_mode(graph) if graph is not None else "full"
    try:
        ensure_readable(tup, mode, thread.pk)
    except CheckpointModeMismatch as exc:
        raise ThreadStorageConflict(str(exc)) from None
    return tup, graph


async def _aget_state(thread, checkpoint_id: str | None) -> dict | None:
    config = _config_for(thread, checkpoint_id)
    tup, graph = await _readable(thread, config)
    if tup is None:
        return None
    if graph is None:
        return _tuple_to_json(tup)
    return snapshot_to_json(await graph.aget_state(config))


def _with_message_seqs(thread_id: str, states: list[dict]) -> list[dict]:
    """The states with each message's journal ``seq`` (``additional_kwargs.deerflow_seq``), so a
    client merging them with the message feed places every message exactly; one lookup for all.
    A client opening a thread reads this, not a stream, so it needs the stamp as much."""
    lists = [(state["values"], state["values"]["messages"]) for state in states
             if isinstance(state.get("values"), dict) and isinstance(state["values"].get("messages"), list)]
    if not lists:
        return states
    named = [identities(messages) for _, messages in lists]
    seqs = message_seqs(thread_id=thread_id, identities={i for names in named for i in names if i})
    for (values, messages), names in zip(lists, named):
        values["messages"] = stamp_messages(messages, seqs, names)
    return states


def thread_state_get(*, thread, checkpoint_id: str | None = None) -> dict:
    state = get_runtime().call(_aget_state, thread, checkpoint_id)
    if state is None:
        if checkpoint_id:
            raise NotFound(f"Checkpoint {checkpoint_id} not found in thread {thread.pk}")
        raise NotFound(f"Thread {thread.pk} has no state yet")
    return _with_message_seqs(thread.pk, [state])[0]


def thread_values(*, thread) -> dict:
    """The current values, or {} when the thread has no checkpoint yet."""
    state = get_runtime().call(_aget_state, thread, None)
    return state["values"] if state else {}


async def _aupdate_state(thread, values: Any, checkpoint_id: str | None, as_node: str | None) -> dict:
    config = _config_for(thread, checkpoint_id)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    tup = await graph.checkpointer.aget_tuple(config)
    if checkpoint_id and tup is None:
        raise NotFound(f"Checkpoint {checkpoint_id} not found in thread {thread.pk}")
    try:
        ensure_readable(tup, graph_mode(graph), thread.pk)
    except CheckpointModeMismatch as exc:
        raise ThreadStorageConflict(str(exc)) from None
    new_config = await graph.aupdate_state(config, values, as_node=as_node)
    return {"checkpoint": _checkpoint_obj(new_config), "checkpoint_id": (new_config.get("configurable") or {}).get("checkpoint_id")}


def thread_state_update(*, thread, values: Any, checkpoint_id: str | None = None, as_node: str | None = None) -> dict:
    if values is not None and not isinstance(values, (dict, list)):
        raise InvalidRequest("values must be an object (or a list of updates)")
    title = _title_written(values)
    for update in values if isinstance(values, list) else [values]:
        if isinstance(update, dict):
            strip_message_seq(update.get("messages"))  # a client writing back what it read
    # The update writes a new head: no run may start from the old one meanwhile.
    with thread_reserved(thread=thread, kind=Kind.CHECKPOINT_WRITE,
                         run_busy_detail=f"Thread {thread.pk} has an active run; wait for it or cancel it"):
        try:
            result = get_runtime().call(_aupdate_state, thread, values, checkpoint_id, as_node)
        except (InvalidRequest, NotFound, ThreadStorageConflict):
            raise
        except Exception as exc:  # LangGraph rejects unknown nodes or channels with plain errors
            raise InvalidRequest(f"could not update the state: {exc}") from None
    if title is not None:
        # DeerFlow's frontend renames a thread this way; the list (threads.search) reads the row.
        thread_title_set(thread_id=thread.pk, title=title)
    return result


def _title_written(values: Any) -> str | None:
    """The title an update sets (the last one of a list of updates), or None if it sets none.
    A title that is not text is refused before anything is written."""
    updates = values if isinstance(values, list) else [values]
    title = None
    for update in updates:
        if isinstance(update, dict) and "title" in update:
            value = update["title"]
            if value is not None and not isinstance(value, str):
                raise InvalidRequest("values.title must be a string")
            title = (value or "").strip()
    return title


async def _ahistory(thread, limit: int, before: str | None) -> list[dict]:
    config = _config_for(thread)
    saver = await get_runtime().checkpointer()
    before_cfg = graphs.thread_config(thread.pk, before) if before else None
    _, graph = await _readable(thread, config)
    if graph is None:
        return [_tuple_to_json(t) async for t in saver.alist(config, before=before_cfg, limit=limit)]
    return [snapshot_to_json(s) async for s in graph.aget_state_history(config, before=before_cfg, limit=limit)]


def thread_history(*, thread, limit: int = 10, before: Any = None) -> list[dict]:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise InvalidRequest("limit must be an integer from 1 to 1000")
    if isinstance(before, dict):
        before = (before.get("configurable") or before).get("checkpoint_id")
    if before is not None and not isinstance(before, str):
        raise InvalidRequest("before must be a checkpoint id")
    return _with_message_seqs(thread.pk, get_runtime().call(_ahistory, thread, limit, before))


async def _adelete(thread_id: str) -> None:
    saver = await get_runtime().checkpointer()
    await saver.adelete_thread(thread_id)


def thread_state_delete(thread_id: str) -> None:
    get_runtime().call(_adelete, thread_id)
