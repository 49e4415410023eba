"""A thread goal the agent keeps working towards, inside the run, as DeerFlow runs it.

The goal lives in the thread's state (the ``goal`` channel; shape in ``harness/agents/goals.py``).
``GET/PUT/DELETE /threads/{id}/goal`` read and write it onto the head.

After each turn of a run on a thread with an active goal (``continue_towards_goal``, on the
engine's ``continuations`` point; a thread without a goal costs a dict lookup):

- a separate evaluator call (``goals.model_name`` in config.yaml, else the default model; traced
  as ``goal_evaluator``, its tokens counted in the run's usage) decides met / not met, and what
  blocks it (a typed blocker);
- met: the goal's status becomes ``met``; blocked (any blocker but ``goal_not_met_yet``), the
  cap reached, or no new answer twice: the goal stays active with ``stand_down_reason`` and the
  next user turn is judged again;
- otherwise one more turn runs in the same run, its input a hidden user message restating the
  goal (the updated goal is written onto the head first); the stream carries ``custom`` ``{"type": "goal_continuation", n, max, blocker, reason}``
  before it, and ``{"type": "goal_stopped", …}`` when the loop ends.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from apps.chat.actions import lineage
from apps.errors import InvalidRequest
from apps.runs import graphs
from apps.runs.lifecycle import TurnEnd
from apps.runs.reservations import Kind as ReservationKind, thread_reserved
from apps.runs.runtime import get_runtime
from harness.agents import goals as goal_logic
from harness.config.loader import get_app_config
from harness.models import create_chat_model, get_model_config
from harness.observability.tracing import atraced, standalone_config
from harness.runtime.checkpoint_state import write_onto_head

logger = logging.getLogger(__name__)

EVALUATOR_TIMEOUT_SECONDS = 120


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
    goal = goal_logic.goal_from_request(objective, max_continuations, default_max=get_app_config().goals.max_continuations)
    _write_reserved(thread, goal)
    return {"thread_id": thread.pk, "goal": goal}


def goal_clear(*, thread) -> None:
    _write_reserved(thread, None)


# -- continuation (the worker's side) -----------------------------------------------------


def _evaluator(app: Any, parent: dict) -> tuple[Any, str, dict]:
    """(model, its name, tracing config). Blocking (builds a model client): off the loop."""
    name = get_model_config(app.goals.model_name, config=app).name
    model = create_chat_model(name, config=app)
    return model, name, standalone_config(app.tracing, "goal_evaluator", parent=parent, model_name=name)


async def _evaluate(turn: TurnEnd, goal: dict, messages: list) -> goal_logic.Evaluation:
    prompt = goal_logic.evaluator_messages(goal, messages)
    if prompt is None:
        return goal_logic.Evaluation(False, "missing_evidence", "No visible answer to judge yet.")
    model, name, trace = await asyncio.to_thread(_evaluator, turn.app_config, turn.config.get("metadata") or {})
    reply = await asyncio.wait_for(atraced(trace, lambda: model.ainvoke(prompt)), EVALUATOR_TIMEOUT_SECONDS)
    usage = getattr(reply, "usage_metadata", None)
    if usage:
        turn.count_usage("goal_evaluator", name, dict(usage))
    content = reply.content if isinstance(reply.content, str) else "".join(
        part.get("text", "") for part in reply.content if isinstance(part, dict))
    return goal_logic.parse_evaluation(content)


def _stopped_event(goal: dict) -> dict:
    last = goal.get("last_evaluation") or {}
    return {"type": "goal_stopped", "status": goal["status"], "stand_down_reason": last.get("stand_down_reason"),
            "blocker": last.get("blocker"), "reason": last.get("reason"), "continuations": goal.get("continuation_count", 0),
            "max": goal.get("max_continuations")}


async def continue_towards_goal(turn: TurnEnd) -> dict | None:
    values = turn.values
    if not isinstance(values, dict) or not values.get("goal"):
        return None  # a thread without a goal: nothing read, nothing written
    goal = values["goal"]
    if goal.get("status") != "active":
        return None
    messages = list(values.get("messages") or [])
    if values.get("stop_reason"):
        # The turn hit a limit or its model failed: no verdict is asked, the loop stands down.
        stopped = goal_logic.Evaluation(False, "run_failed", f"the turn stopped: {values['stop_reason']}")
        goal, go_on = goal_logic.judge(goal, stopped, messages, run_id=turn.run_id)
    else:
        try:
            evaluation = await _evaluate(turn, goal, messages)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the answer stands; only the loop stops, saying why
            logger.warning("Goal evaluator failed for run %s: %s", turn.run_id, exc)
            goal, go_on = goal_logic.failed_evaluation(goal, f"the evaluator failed: {type(exc).__name__}: {exc}", run_id=turn.run_id), False
        else:
            goal, go_on = goal_logic.judge(goal, evaluation, messages, run_id=turn.run_id)
    meta = turn.meta
    # Onto the head, not in the next turn's input: an agent's input schema may not take the
    # goal channel. Threads with a goal pay one checkpoint per evaluation.
    await write_onto_head(turn.graph, _config(meta["thread_id"], meta["owner_id"], meta.get("assistant_id") or ""), {**values, "goal": goal})
    if go_on:
        await turn.publish("custom", {"type": "goal_continuation", "n": goal["continuation_count"], "max": goal["max_continuations"],
                                      "blocker": goal["last_evaluation"]["blocker"], "reason": goal["last_evaluation"]["reason"]})
        return {"messages": [goal_logic.continuation_message(goal)]}
    await turn.publish("custom", _stopped_event(goal))
    return None
