"""A thread goal the agent keeps working towards across continuations.

The goal lives in the thread's state (the ``goal`` channel), so the worker learns whether a
thread has one from the values it already holds at the end of a run: a thread without a
goal costs nothing. ``GET/PUT/DELETE /threads/{id}/goal`` read and write it onto the head.

After a successful run with an active goal (``continue_towards_goal``, on the engine's
``after_settle`` point):

- the answer ends with the line ``GOAL_MET``: the goal is marked met;
- ``continuations`` reached ``max_continuations`` (0–8): it stops, ``cap_reached``;
- two continuations in a row added no new answer text: it stops, ``no_progress``;
- otherwise a continuation run is admitted on the thread with a hidden instruction, and the
  finished run's stream carries ``custom`` ``{"type": "goal_continuation", n, max, run_id}``
  before its end, so a client can follow the next run ("continuing towards the goal (2/8)").
"""

from __future__ import annotations

import logging
from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from langchain_core.messages import AIMessage

from apps.chat.actions import lineage
from apps.errors import DomainError, InvalidRequest
from apps.runs import graphs
from apps.runs.lifecycle import RunOutcome
from apps.runs.reservations import Kind as ReservationKind, thread_reserved
from apps.runs.runtime import get_runtime
from apps.runs.schemas import parse_run_request
from apps.runs.services import start_run
from harness.runtime.checkpoint_state import write_onto_head

logger = logging.getLogger(__name__)

MAX_OBJECTIVE_CHARS = 4000
MAX_CONTINUATIONS = 8
DEFAULT_CONTINUATIONS = 3
NO_PROGRESS_LIMIT = 2
MET_MARKER = "GOAL_MET"


def _config(thread_id: str, owner_id: Any, assistant_id: str) -> dict:
    return graphs.thread_config(thread_id, user_id=str(owner_id), assistant_id=assistant_id or graphs.LEAD_AGENT)


async def _read(thread) -> dict | None:
    config = _config(thread.pk, thread.owner_id, thread.assistant_id)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    _, values = await lineage.head_values(graph, thread.pk)
    return values.get("goal") or None


async def _write(thread, goal: dict | None) -> None:
    config = _config(thread.pk, thread.owner_id, thread.assistant_id)
    graph = await graphs.build_graph(config, await get_runtime().checkpointer())
    if "goal" not in graph.channels:
        raise InvalidRequest("this agent's thread state has no goal channel")
    _, values = await lineage.head_values(graph, thread.pk)
    await write_onto_head(graph, config, {**values, "goal": goal})


def goal_get(*, thread) -> dict:
    return {"thread_id": thread.pk, "goal": get_runtime().call(_read, thread)}


def _write_reserved(thread, goal: dict | None) -> None:
    # A goal is written onto the head: no run may start from the head being replaced.
    with thread_reserved(thread=thread, kind=ReservationKind.CHECKPOINT_WRITE,
                         run_busy_detail=f"Thread {thread.pk} has an active run; change its goal once the run has finished"):
        get_runtime().call(_write, thread, goal)


def goal_set(*, thread, objective: Any, max_continuations: Any = None) -> dict:
    if not isinstance(objective, str) or not objective.strip():
        raise InvalidRequest("objective: a non-empty string is required")
    if len(objective) > MAX_OBJECTIVE_CHARS:
        raise InvalidRequest(f"objective: at most {MAX_OBJECTIVE_CHARS} characters (got {len(objective)})")
    if max_continuations is None:
        max_continuations = DEFAULT_CONTINUATIONS
    if not isinstance(max_continuations, int) or isinstance(max_continuations, bool) or not 0 <= max_continuations <= MAX_CONTINUATIONS:
        raise InvalidRequest(f"max_continuations must be an integer from 0 to {MAX_CONTINUATIONS}")
    goal = {"objective": objective.strip(), "max_continuations": max_continuations, "continuations": 0,
            "no_progress": 0, "status": "active", "last_answer": None}
    _write_reserved(thread, goal)
    return {"thread_id": thread.pk, "goal": goal}


def goal_clear(*, thread) -> None:
    _write_reserved(thread, None)


# -- continuations (the worker's side) ---------------------------------------------------


def _last_answer(values: dict) -> str:
    for message in reversed(values.get("messages") or []):
        if isinstance(message, AIMessage):
            content = message.content
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "").strip()
    return ""


def _instruction(goal: dict, n: int) -> str:
    return (f"Continue working towards the thread's goal: {goal['objective']}\n"
            f"This is continuation {n} of at most {goal['max_continuations']}. Do the next useful step; "
            f"when the goal is met, say so and end your answer with a line containing only {MET_MARKER}.")


def _admit(meta: dict, goal: dict, n: int) -> str | None:
    source = dict(meta.get("kwargs") or {})
    body = {key: source[key] for key in ("context", "config", "stream_mode", "stream_subgraphs") if key in source}
    body.update({
        "assistant_id": meta.get("assistant_id") or graphs.LEAD_AGENT,
        "input": {"messages": [{"role": "user", "content": _instruction(goal, n),
                                "additional_kwargs": {"hide_from_ui": True, "goal_continuation": n}}], "goal": goal},
        "metadata": {"goal_continuation": {"n": n, "max": goal["max_continuations"]}},
        "multitask_strategy": "reject", "on_disconnect": "continue",
    })
    user = get_user_model().objects.get(pk=meta["owner_id"])
    try:
        admitted = start_run(user=user, thread_id=meta["thread_id"], request=parse_run_request(body))
    except DomainError as exc:  # the user started a run meanwhile, or the thread went: they come first
        logger.info("No goal continuation for thread %s: %s", meta["thread_id"], exc.detail)
        return None
    return str(admitted.run.pk)


async def continue_towards_goal(outcome: RunOutcome) -> None:
    values = outcome.values
    if not outcome.succeeded or not isinstance(values, dict) or not values.get("goal"):
        return  # a thread without a goal: nothing read, nothing written
    graph, run_id, meta = outcome.graph, outcome.run_id, outcome.meta
    goal = dict(values.get("goal") or {})
    if goal.get("status") != "active":
        return
    answer = _last_answer(values)
    stop = None
    if answer.splitlines() and answer.splitlines()[-1].strip() == MET_MARKER:
        stop = "met"
    elif goal.get("continuations", 0) >= goal.get("max_continuations", 0):
        stop = "cap_reached"
    else:
        progressed = bool(answer) and answer != goal.get("last_answer")
        goal["no_progress"] = 0 if progressed else goal.get("no_progress", 0) + 1
        if goal["no_progress"] >= NO_PROGRESS_LIMIT:
            stop = "no_progress"
    goal["last_answer"] = answer[-2000:]
    bridge = get_runtime().bridge
    try:
        if stop is not None:
            goal["status"] = stop
            config = _config(meta["thread_id"], meta["owner_id"], meta.get("assistant_id") or "")
            await write_onto_head(graph, config, {**values, "goal": goal})
            await bridge.apublish(run_id, "custom", {"type": "goal_stopped", "status": stop, "continuations": goal["continuations"]})
            return
        goal["continuations"] = n = goal.get("continuations", 0) + 1
        next_run = await database_sync_to_async(_admit)(meta, goal, n)
        if next_run is not None:
            await bridge.apublish(run_id, "custom", {"type": "goal_continuation", "n": n, "max": goal["max_continuations"], "run_id": next_run})
    except Exception:  # the finished run stays finished whatever happens here
        logger.exception("Goal continuation after run %s failed", run_id)
