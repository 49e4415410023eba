"""Answer versions: after a regenerate or an edit, the ‹ 1/2 › arrows show one version of the
turn at a time, and the conversation goes on from the one shown.

The versions are stored already: every replay is a run of its own whose rows stay in the
journal and whose checkpoints stay in the head's ancestry (rewinds are written onto the head,
never forked). Showing an earlier version therefore needs two writes and no copy:

- which runs the history shows: a ``VisibilitySwitch`` row (apps/runs/visibility.py folds it
  with the replays), so a reload shows the chosen version;
- the agent's state: the state as the newest run of the chosen branch left it (its last
  checkpoint in the ancestry), written onto the head, so the next message continues from it.

Both happen while the thread is reserved (no run may start from a head about to be replaced),
and a state that cannot be written takes the row back.
"""

from __future__ import annotations

from typing import Any

from apps.chat.actions import lineage
from apps.errors import Conflict, InvalidRequest, NotFound
from apps.runs import graphs
from apps.runs.reservations import Kind as ReservationKind, thread_reserved
from apps.runs.runtime import get_runtime
from apps.runs.selectors import thread_runs_newest_first
from apps.runs.services import visibility_switch_record, visibility_switch_undo
from apps.runs.visibility import hidden_run_ids, switch_plan, version_groups
from harness.runtime.checkpoint_state import write_onto_head

# Enough to pass the runs of a failed or empty turn at the end of a branch.
_SEARCH_RUNS = 50


def answer_versions(*, thread) -> dict:
    """``{groups: [{run_ids, kinds, shown, index, total}]}``: the turns with more than one version."""
    groups = []
    for g in version_groups(thread_id=thread.pk):
        if g.shown is None:
            continue  # the whole turn belongs to a version not shown: its arrows are not on the page
        groups.append({"run_ids": list(g.run_ids), "kinds": list(g.kinds), "shown": g.shown,
                       "index": g.run_ids.index(g.shown) + 1, "total": len(g.run_ids)})
    return {"thread_id": thread.pk, "groups": groups}


async def _state_of_branch(thread, visible_newest_first: list[str]) -> dict[str, Any]:
    """The state as the newest visible run that wrote a checkpoint left it; a branch whose
    turns are all seeded (no checkpoint of their own) is the thread's first checkpoint."""
    config = graphs.thread_config(thread.pk, user_id=str(thread.owner_id), assistant_id=thread.assistant_id or graphs.LEAD_AGENT)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    chain = await lineage.ancestry(graph.checkpointer, thread.pk)
    if not chain:
        raise Conflict(f"Thread {thread.pk} has no state")
    last_of: dict[str, Any] = {}
    for tup in chain:  # newest first: the first checkpoint of a run is its last one
        run = (tup.metadata or {}).get("run_id")
        if run and run not in last_of:
            last_of[run] = tup
    target = next((last_of[r] for r in visible_newest_first if r in last_of), chain[-1])
    values = dict((await graph.aget_state(target.config)).values or {})
    if thread.title:
        values["title"] = thread.title  # a rename made since that version stays
    await write_onto_head(graph, config, values)
    return values


def answer_version_show(*, thread, run_id: Any) -> dict:
    """Show version ``run_id`` of its turn; the thread's state becomes that branch's."""
    if not isinstance(run_id, str) or not run_id:
        raise InvalidRequest("run_id: the version's run id is required")
    with thread_reserved(thread=thread, kind=ReservationKind.CHECKPOINT_WRITE,
                         run_busy_detail=f"Thread {thread.pk} has an active run; switch versions once it has finished"):
        try:
            plan = switch_plan(thread_id=thread.pk, run_id=run_id)
        except LookupError:
            raise NotFound(f"Run {run_id} is not a version of an answer shown in thread {thread.pk}") from None
        if plan is None:
            return answer_versions(thread=thread)
        hide, show = plan
        switch = visibility_switch_record(thread_id=thread.pk, shown_run_id=run_id, hidden_run_ids=hide, shown_run_ids=show)
        try:
            hidden = hidden_run_ids(thread_id=thread.pk)
            visible = [str(r.pk) for r in thread_runs_newest_first(thread_id=thread.pk, excluding=hidden, limit=_SEARCH_RUNS)]
            get_runtime().call(_state_of_branch, thread, visible)
        except Exception:
            visibility_switch_undo(switch_id=switch.pk)
            raise
    return answer_versions(thread=thread)
