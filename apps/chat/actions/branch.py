"""Branch a thread from a completed assistant turn into a new thread of the same owner.

The branch's state is the source thread's state as that turn left it (``lineage``), minus
the channels bound to the source thread (its sandbox, its paths), written as the new
thread's first checkpoint. Its visible history comes from the journal, not checkpoints, so
the source's visible runs up to that turn are copied as one seeded run per turn (status
success, ``metadata.branch_seed``) with their message rows: a regenerate on the branch then
replaces one inherited turn, never the whole inherited history.

Workspace files are not in checkpoints: the user-data folders are copied only when the
branch starts at the latest turn (``workspace_clone_mode: copied``); from an older turn
they would hold files of a later timeline, so the copy is skipped and reported
(``skipped_historical_turn``).
"""

from __future__ import annotations

import logging
import shutil
from typing import Any

from django.db import transaction

from apps.chat.actions import lineage
from apps.errors import Conflict, InvalidRequest, NotFound
from apps.runs import graphs
from apps.runs.lifecycle import RunStatus
from apps.runs.runtime import get_runtime
from apps.runs.reservations import Kind as ReservationKind, thread_reserved
from apps.runs.selectors import answer_run_id, run_has_answer, run_message_ids, thread_run, thread_runs_oldest_first
from apps.runs.services import runs_seed_copy
from apps.runs.visibility import hidden_run_ids
from apps.threads.metadata import check_metadata_size
from apps.threads.selectors import thread_titles_taken
from apps.threads.services import thread_branch_create
from harness.config import thread_user_data_dir
from harness.runtime.checkpoint_state import write_onto_head

logger = logging.getLogger(__name__)


def _turn_run(thread, *, message_id: Any, run_id: Any):
    if message_id is None and run_id is None:
        raise InvalidRequest("message_id (an assistant message) or run_id is required")
    if message_id is not None:
        if not isinstance(message_id, str):
            raise InvalidRequest("message_id must be a string")
        run_id = answer_run_id(thread_id=thread.pk, message_id=message_id)
        if run_id is None:
            raise NotFound(f"Assistant message {message_id} not found in thread {thread.pk}")
    run = thread_run(thread_id=thread.pk, run_id=run_id)
    if run is None:
        raise NotFound(f"Run {run_id} not found in thread {thread.pk}")
    if str(run.pk) in hidden_run_ids(thread_id=thread.pk):
        raise NotFound(f"Run {run_id} is not in thread {thread.pk}'s visible history (it was replaced)")
    if run.status != RunStatus.SUCCESS:
        raise Conflict(f"Run {run_id} is not a completed turn (status: {run.status}); branch from a completed answer")
    if not run_has_answer(run_id=str(run.pk)):
        raise Conflict(f"Run {run_id} has no assistant answer to branch from")
    return run


async def _read_values(thread, run_id: str, message_ids: set[str]) -> tuple[dict[str, Any], str | None]:
    """The state the turn left (thread-bound channels dropped), and the id of the checkpoint it
    was read from: the turn's own last one, or the head when the turn's were written over."""
    config = graphs.thread_config(thread.pk, user_id=str(thread.owner_id), assistant_id=thread.assistant_id or graphs.LEAD_AGENT)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    values = await lineage.values_after_run(graph, thread.pk, run_id, message_ids)
    chain = await lineage.ancestry(graph.checkpointer, thread.pk)
    source = next((t for t in chain if (t.metadata or {}).get("run_id") == run_id), chain[0] if chain else None)
    checkpoint_id = source.config["configurable"]["checkpoint_id"] if source is not None else None
    return {k: v for k, v in values.items() if k not in lineage.THREAD_BOUND_CHANNELS}, checkpoint_id


async def _write_values(branch, values: dict[str, Any]) -> None:
    config = graphs.thread_config(branch.pk, user_id=str(branch.owner_id), assistant_id=branch.assistant_id or graphs.LEAD_AGENT)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    await write_onto_head(graph, config, values)


async def _drop_state(thread_id: str) -> None:
    await (await get_runtime().checkpointer()).adelete_thread(thread_id)


def _branch_title(thread, title: Any) -> str:
    if title is not None:
        if not isinstance(title, str) or not title.strip() or len(title) > 255:
            raise InvalidRequest("title must be a non-empty string of at most 255 characters")
        return title.strip()
    custom = (thread.metadata or {}).get("title")  # a rename in the chat lives in metadata
    base = (custom if isinstance(custom, str) and custom.strip() else thread.title) or "Untitled chat"
    taken = thread_titles_taken(owner_id=thread.owner_id, prefix=f"{base} (branch")
    candidate, n = f"{base} (branch)", 2
    while candidate in taken:
        candidate, n = f"{base} (branch {n})", n + 1
    return candidate[:255]


MAX_MESSAGE_IDS = 200


def _one_turn_message(thread, message_id: Any, message_ids: Any) -> Any:
    """DeerFlow's frontend sends ``message_id`` and ``message_ids`` (every assistant message of
    the turn): they must all be answers of one turn; that turn's first named message stands for it."""
    if message_ids is None or message_ids == []:
        return message_id
    if not isinstance(message_ids, list) or not all(isinstance(m, str) and m for m in message_ids):
        raise InvalidRequest("message_ids must be a list of message id strings")
    if len(message_ids) > MAX_MESSAGE_IDS:
        raise InvalidRequest(f"message_ids: at most {MAX_MESSAGE_IDS}")
    if message_id is not None and not isinstance(message_id, str):
        raise InvalidRequest("message_id must be a string")
    named = list(dict.fromkeys([*([message_id] if message_id else []), *message_ids]))
    runs = set()
    for mid in named:
        rid = answer_run_id(thread_id=thread.pk, message_id=mid)
        if rid is None:
            raise NotFound(f"Assistant message {mid} not found in thread {thread.pk}")
        runs.add(str(rid))
    if len(runs) > 1:
        raise InvalidRequest("message_ids name assistant messages of more than one turn")
    return named[0]


def branch_create(*, user, thread, message_id: Any = None, run_id: Any = None, title: Any = None,
                  message_ids: Any = None) -> dict:
    message_id = _one_turn_message(thread, message_id, message_ids)
    # The source's journal, checkpoints and files are read as one moment: no run may move
    # them on meanwhile (the branch would mix two timelines).
    with thread_reserved(thread=thread, kind=ReservationKind.BRANCH,
                         run_busy_detail=f"Thread {thread.pk} has an active run; branch once it has finished"):
        return _branch(user=user, thread=thread, message_id=message_id, run_id=run_id, title=title)


def _branch(*, user, thread, message_id: Any, run_id: Any, title: Any) -> dict:
    # The branch inherits the metadata: one over the limit (a thread from before it) is not
    # copied into a new thread. ``branched_from``, the server's, is not counted.
    inherited_metadata = {k: v for k, v in (thread.metadata or {}).items() if k not in ("branched_from", "title")}
    check_metadata_size(inherited_metadata, what=f"the metadata thread {thread.pk} passes to its branch")
    turn = _turn_run(thread, message_id=message_id, run_id=run_id)
    hidden = hidden_run_ids(thread_id=thread.pk)
    visible = thread_runs_oldest_first(thread_id=thread.pk, excluding=hidden)
    inherited = visible[: visible.index(turn) + 1]
    latest = visible[-1].pk == turn.pk
    message_ids = run_message_ids(run_id=str(turn.pk))
    runtime = get_runtime()
    values, parent_checkpoint_id = runtime.call(_read_values, thread, str(turn.pk), message_ids)
    branch_title = _branch_title(thread, title)
    with transaction.atomic():
        branch = thread_branch_create(
            owner=user, assistant_id=thread.assistant_id, title=branch_title,
            metadata={**inherited_metadata, "branched_from": {"thread_id": thread.pk, "run_id": str(turn.pk)}},
        )
        branch_id = branch.pk
        seeded = runs_seed_copy(thread=branch, source_runs=inherited)
    # The checkpoint write is outside the transaction (it waits on the runs loop; SQLite's
    # write lock should not wait with it); when it fails the new thread goes again.
    try:
        runtime.call(_write_values, branch, values)
    except Exception:
        runtime.call(_drop_state, branch_id)
        branch.delete()
        raise
    mode = "skipped_historical_turn"
    if latest:
        mode = "copied" if _copy_user_data(thread, branch) else "empty"
    return {"thread_id": branch.pk, "title": branch.title, "source_thread_id": thread.pk, "source_run_id": str(turn.pk),
            "workspace_clone_mode": mode, "history_seed_mode": "per_turn", "seeded_turns": len(inherited), "seeded_messages": seeded,
            # DeerFlow's names for the same facts (its frontend reads thread_id).
            "parent_thread_id": thread.pk, "parent_checkpoint_id": parent_checkpoint_id,
            "branched_from_message_id": message_id}


def _copy_user_data(source, branch) -> bool:
    src = thread_user_data_dir(source.owner_id, source.pk)
    if not src.is_dir():
        return False
    dst = thread_user_data_dir(branch.owner_id, branch.pk)
    try:
        # Symlinks stay links (never followed out of the thread's folder).
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    except OSError:
        logger.warning("Could not copy the files of thread %s to its branch %s", source.pk, branch.pk, exc_info=True)
        return False
    return True
