"""Regenerate the latest answer, and edit the latest user message and rerun.

Both rewind the thread to the state just before the run being replaced (``lineage``),
written onto the head so it works the same in full and delta checkpoint modes, then admit
an ordinary run with that run's input (edited, for an edit). The new run's metadata names
what it replaces and the head it was started from::

    {"replay": {"kind": "regenerate"|"edit", "source_run_id": ..., "restore_checkpoint_id": ...}}

``settle`` (called by the worker only for such runs) puts the pre-edit state back when the
replay fails or is cancelled, and journals a ``replay.restored`` event saying so; the
history then shows the original turn again (``visibility``).
"""

from __future__ import annotations

import copy
import logging
import uuid
from typing import Any

from apps.chat.actions import lineage
from apps.errors import Conflict, InvalidRequest, NotFound, ThreadBusy
from apps.runs import graphs
from apps.runs.journal import JournalEvent
from apps.runs.lifecycle import RunOutcome, RunStart, RunStatus
from apps.runs.runtime import database_sync_to_async, get_runtime
from apps.runs.schemas import parse_run_request
from apps.runs.selectors import (answer_run_id, run_has_answer, run_message_ids, thread_has_active_run,
                                 thread_has_message, thread_run, thread_runs_newest_first)
from apps.runs.services import start_run
from apps.runs.visibility import hidden_run_ids, replay_failed
from apps.threads.selectors import thread_titles
from harness.runtime.checkpoint_state import write_onto_head

logger = logging.getLogger(__name__)

MAX_EDIT_CHARS = 100_000
# Options a caller may change for the replay; the rest is the replaced run's request.
OVERRIDABLE = ("stream_mode", "context", "config", "metadata", "stream_subgraphs")


def _visible_runs(thread):
    hidden = hidden_run_ids(thread_id=thread.pk)
    return thread_runs_newest_first(thread_id=thread.pk, excluding=hidden, limit=20)


def _input_messages(run) -> list[dict]:
    payload = (run.kwargs or {}).get("input") or {}
    return [m for m in payload.get("messages") or [] if isinstance(m, dict)]


def _is_human(message: dict) -> bool:
    return (message.get("role") or message.get("type")) in ("user", "human")


def _is_visible_human(message: dict) -> bool:
    # A goal continuation's instruction is a user message nobody typed: not editable.
    return _is_human(message) and not (message.get("additional_kwargs") or {}).get("hide_from_ui")


def _run_message_ids(run_id: str) -> set[str]:
    return run_message_ids(run_id=run_id)


def latest_answer_run(thread):
    """The run that produced the latest visible answer (what regenerate replaces)."""
    if thread_has_active_run(thread.pk):
        raise ThreadBusy(f"Thread {thread.pk} has an active run; wait for it or cancel it")
    for run in _visible_runs(thread):
        if run_has_answer(run_id=str(run.pk)):
            if not any(_is_human(m) for m in _input_messages(run)):
                raise Conflict(f"The latest answer in thread {thread.pk} (run {run.pk}) did not come from a user message "
                               "(a resumed or continued run); there is nothing to regenerate it from")
            return run
    raise NotFound(f"Thread {thread.pk} has no answer to regenerate")


def latest_editable_run(thread, message_id: str | None):
    """The latest visible run started by a user message (what edit-rerun replaces)."""
    if thread_has_active_run(thread.pk):
        raise ThreadBusy(f"Thread {thread.pk} has an active run; wait for it or cancel it")
    for run in _visible_runs(thread):
        if any(_is_visible_human(m) for m in _input_messages(run)):
            if message_id is not None:
                if message_id not in run_message_ids(run_id=str(run.pk), event_type="llm.human.input"):
                    if not thread_has_message(thread_id=thread.pk, message_id=message_id):
                        raise NotFound(f"Message {message_id} not found in thread {thread.pk}")
                    raise Conflict(f"Message {message_id} is not editable: only the latest user message can be edited and rerun")
            return run
    raise NotFound(f"Thread {thread.pk} has no user message to edit")


def _replay_request(source, messages: list[dict], kind: str, restore_checkpoint_id: str | None, overrides: dict) -> Any:
    kwargs = copy.deepcopy(source.kwargs or {})
    for key in ("checkpoint_id", "checkpoint", "command", "multitask_strategy"):
        kwargs.pop(key, None)
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
    kwargs.update({k: v for k, v in overrides.items() if k != "metadata"})
    kwargs["input"] = {**(kwargs.get("input") or {}), "messages": messages}
    metadata = {k: v for k, v in (source.metadata or {}).items() if k not in ("replay", "branch_seed")}
    extra = overrides.get("metadata")
    if extra is not None and not isinstance(extra, dict):
        raise InvalidRequest("metadata must be an object")
    metadata.update(extra or {})
    # The source and what came after it (an edited question may have goal continuations after it).
    later = [str(r.pk) for r in _visible_runs(source.thread) if r.created_at > source.created_at]
    metadata["replay"] = {"kind": kind, "source_run_id": str(source.pk), "restore_checkpoint_id": restore_checkpoint_id,
                          "superseded_run_ids": [str(source.pk), *later]}
    kwargs["metadata"] = metadata
    kwargs["multitask_strategy"] = "reject"
    # Started by a POST that does not stream: a client joining the stream and leaving must not cancel it.
    kwargs["on_disconnect"] = "continue"
    return parse_run_request(kwargs)


def _config(thread) -> dict:
    return graphs.thread_config(thread.pk, user_id=str(thread.owner_id), assistant_id=thread.assistant_id or graphs.LEAD_AGENT)


async def _rewind(thread, source_id: str, message_ids: set[str]) -> str | None:
    """Write the state before ``source_id`` onto the head; returns the head it replaced."""
    config = _config(thread)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    head_id, _ = await lineage.head_values(graph, thread.pk)
    values = await lineage.values_before_run(graph, thread.pk, source_id, message_ids)
    if thread.title:
        # The title the thread has now, not the one (or none) the older state had.
        values["title"] = thread.title
    await write_onto_head(graph, config, values)
    return head_id


async def _restore(config: dict, graph: Any, checkpoint_id: str | None) -> None:
    if checkpoint_id is None:
        values: dict[str, Any] = {}
    else:
        snapshot = await graph.aget_state({**config, "configurable": {**config["configurable"], "checkpoint_id": checkpoint_id}})
        values = dict(snapshot.values or {})
    await write_onto_head(graph, config, values)


async def _restore_standalone(thread, checkpoint_id: str | None) -> None:
    config = _config(thread)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    await _restore(config, graph, checkpoint_id)


def replay_start(*, user, thread, kind: str, content: str | None = None, message_id: str | None = None,
                 overrides: dict | None = None):
    """Rewind and admit the replay run; nothing stays changed when admission fails."""
    if kind == "edit":
        if not isinstance(content, str) or not content.strip():
            raise InvalidRequest("content: the replacement message text is required")
        if len(content) > MAX_EDIT_CHARS:
            raise InvalidRequest(f"content: at most {MAX_EDIT_CHARS} characters")
        if message_id is not None and not isinstance(message_id, str):
            raise InvalidRequest("message_id must be a string")
        source = latest_editable_run(thread, message_id)
        messages = copy.deepcopy(_input_messages(source))
        last_human = max(i for i, m in enumerate(messages) if _is_visible_human(m))
        messages[last_human] = {"role": "user", "content": content}
    else:
        source = latest_answer_run(thread)
        messages = copy.deepcopy(_input_messages(source))
    for m in messages:
        m.pop("id", None)  # the replay's messages are new ones; the replaced ones stay in history
    runtime = get_runtime()
    request = _replay_request(source, messages, kind, None, dict(overrides or {}))
    restore_id = runtime.call(_rewind, thread, str(source.pk), _run_message_ids(str(source.pk)))
    request.metadata["replay"]["restore_checkpoint_id"] = restore_id
    try:
        admitted = start_run(user=user, thread_id=thread.pk, request=request)
    except Exception:
        runtime.call(_restore_standalone, thread, restore_id)
        raise
    return admitted, source


async def settle(outcome: RunOutcome) -> list[JournalEvent]:
    """For a replay run that ended (on the engine's ``before_settle`` point): when it failed or
    was cancelled, the thread's state before the replay becomes the head again; the journal
    says so, with the run's last entries."""
    replay = outcome.meta["metadata"].get("replay")
    graph, config, status = outcome.graph, outcome.config, outcome.status
    if not replay or graph is None or not replay_failed(status, outcome.stop_reason):
        return []
    thread_config = {"configurable": {k: v for k, v in config["configurable"].items() if k not in ("checkpoint_id", "checkpoint_map")}}
    restore_id = replay.get("restore_checkpoint_id")
    try:
        await _restore(thread_config, graph, restore_id)
    except Exception:
        logger.exception("Could not restore thread %s after a failed %s", config["configurable"].get("thread_id"), replay.get("kind"))
        return []
    what = "edit" if replay.get("kind") == "edit" else "regenerated answer"
    reason = "was cancelled" if status == RunStatus.INTERRUPTED else "failed"
    text = f"The {what} {reason}; the conversation as it was before is restored."
    return [JournalEvent("replay.restored", "outputs", text,
                         {"replay_kind": replay.get("kind"), "source_run_id": replay.get("source_run_id"), "restored_checkpoint_id": restore_id})]


# --- DeerFlow's two-step replay: prepare, then an ordinary run -------------------------------
#
# DeerFlow's frontend asks ``POST /runs/regenerate/prepare`` (or ``edit-regenerate/prepare``)
# for the run to start, then streams it with ``runs.stream(input, checkpoint, metadata)``.
# Preparing changes nothing: it answers the thread's head as the checkpoint, and metadata with
# DeerFlow's keys and our ``replay`` marker (``prepared: true``). When that run starts,
# ``rewind_prepared`` (on the engine's ``before_run`` point) writes the state before the
# replaced run onto the head, as ``replay_start`` does, and the run goes on from there; the
# history hides the replaced turn (``visibility``) and a failed or cancelled replay puts the
# head back (``settle``), exactly as for our one-step routes.


async def _head_id(thread) -> str | None:
    saver = await get_runtime().checkpointer()
    tup = await saver.aget_tuple(graphs.thread_config(thread.pk))
    return tup.config["configurable"]["checkpoint_id"] if tup is not None else None


def _prepared(thread, source, kind: str, messages: list[dict], deerflow_metadata: dict) -> dict:
    head_id = get_runtime().call(_head_id, thread)
    if head_id is None:
        raise NotFound(f"Thread {thread.pk} has no checkpoint")
    later = [str(r.pk) for r in _visible_runs(thread) if r.created_at > source.created_at]
    metadata = {**deerflow_metadata, "regenerate_from_run_id": str(source.pk), "regenerate_checkpoint_id": head_id,
                "replay": {"kind": kind, "source_run_id": str(source.pk), "restore_checkpoint_id": head_id,
                           "superseded_run_ids": [str(source.pk), *later], "prepared": True}}
    payload: dict[str, Any] = {"messages": messages}
    if thread.title:
        # The state before the replaced run may predate a rename: the run keeps today's title.
        payload["title"] = thread.title
    return {"input": payload, "checkpoint": {"thread_id": thread.pk, "checkpoint_ns": "", "checkpoint_id": head_id},
            "metadata": metadata, "target_run_id": str(source.pk)}


async def rewind_prepared(start: RunStart) -> None:
    """For a run started from a prepared replay: the state before the replaced run becomes the
    head, and the run starts from it (not from the checkpoint the client echoed back)."""
    replay = (start.meta.get("metadata") or {}).get("replay") or {}
    if not replay.get("prepared"):
        return
    thread_id = start.meta["thread_id"]
    source_id = str(replay.get("source_run_id") or "")
    source = await database_sync_to_async(thread_run)(thread_id=thread_id, run_id=source_id)
    if source is None:
        raise NotFound(f"Run {source_id} not found in thread {thread_id}")
    message_ids = await database_sync_to_async(run_message_ids)(run_id=source_id)
    title = (await database_sync_to_async(thread_titles)([thread_id])).get(thread_id) or ""
    config = graphs.thread_config(thread_id, user_id=str(start.meta["owner_id"]),
                                  assistant_id=start.meta.get("assistant_id") or graphs.LEAD_AGENT)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    head_id, _ = await lineage.head_values(graph, thread_id)
    values = await lineage.values_before_run(graph, thread_id, source_id, message_ids)
    if title:
        values["title"] = title
    await write_onto_head(graph, config, values)
    replay["restore_checkpoint_id"] = head_id
    start.config["configurable"].pop("checkpoint_id", None)
    start.config["configurable"].pop("checkpoint_map", None)


def _required_text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(f"{field}: a non-empty string is required")
    return value


def regenerate_prepare(*, thread, message_id: Any) -> dict:
    """``{input, checkpoint, metadata, target_run_id}`` for regenerating the latest answer."""
    message_id = _required_text(message_id, "message_id")
    source = latest_answer_run(thread)
    owner = answer_run_id(thread_id=thread.pk, message_id=message_id)
    if owner is None:
        if thread_has_message(thread_id=thread.pk, message_id=message_id):
            raise Conflict("Only visible assistant messages can be regenerated")
        raise NotFound(f"Message {message_id} not found")
    if owner != str(source.pk):
        raise Conflict("Only the latest assistant message can be regenerated")
    messages = copy.deepcopy([m for m in _input_messages(source)])
    for m in messages:
        m.pop("id", None)
    return _prepared(thread, source, "regenerate", messages, {"regenerate_from_message_id": message_id})


def edit_regenerate_prepare(*, thread, human_message_id: Any, replacement_text: Any) -> dict:
    """DeerFlow's edit-and-rerun preparation: the above plus ``replacement_human_message_id``
    (the id the edited message will have) and ``source_message_ids`` (the replaced turn's)."""
    human_message_id = _required_text(human_message_id, "human_message_id")
    text = _required_text(replacement_text, "replacement_text").strip()
    if len(text) > MAX_EDIT_CHARS:
        raise InvalidRequest(f"replacement_text: at most {MAX_EDIT_CHARS} characters")
    source = latest_editable_run(thread, human_message_id)
    messages = copy.deepcopy(_input_messages(source))
    last_human = max(i for i, m in enumerate(messages) if _is_visible_human(m))
    old = messages[last_human].get("content")
    if isinstance(old, str) and old.strip() == text:
        raise Conflict("Edited message is unchanged")
    replacement_id = str(uuid.uuid4())
    messages[last_human] = {"role": "user", "content": text, "id": replacement_id}
    for i, m in enumerate(messages):
        if i != last_human:
            m.pop("id", None)
    prepared = _prepared(thread, source, "edit", messages, {
        "replay_kind": "edit", "edit_from_message_id": human_message_id, "edit_message_id": replacement_id})
    return {**prepared, "replacement_human_message_id": replacement_id,
            "source_message_ids": sorted(run_message_ids(run_id=str(source.pk)))}
