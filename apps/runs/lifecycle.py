"""The run engine's hook points: where feature apps join a run's life.

The engine imports no feature. A feature registers its functions here in its
``AppConfig.ready()`` and the engine calls them, in registration order, at fixed moments:

- ``agent_resolvers``: ``fn(user, assistant_id) -> dict | None`` at admission; the first
  non-None answer is the run's agent settings (custom agents). May raise ``NotFound``.
- ``admission_checks``: ``fn(Admission)`` at admission, before anything is written; raises a
  domain error to refuse the run (budgets, model probes).
- ``before_run``: ``async fn(RunStart)`` on the runs loop before the graph is built; may add
  to the run's context (memory), and journal events to ``RunStart.events``, which the run's
  journal records and its stream carries as ``custom`` events (``{"type": event_type, **content}``)
  to clients that asked for that mode. Failures fail the run, as a failed graph build would.
- ``continuations``: ``async fn(TurnEnd) -> dict | None`` after each turn of the graph that
  ended without an interrupt, on the runs loop; the first non-None answer is the input of one
  more turn in the same run (goal continuation). Model calls a hook makes count toward the
  run's usage through ``TurnEnd.count_usage``. Failures fail the run, as the turn's would.
- ``before_settle``: ``async fn(RunOutcome) -> list`` of journal events written with the
  run's final row (replay bookkeeping), or a ``Settling`` that may also fail a run that would
  have succeeded (an undelivered output: the run is recorded as an error with its reason).
- ``settled``: ``fn(SettledRun)`` inside the transaction that writes the run's final row,
  for a feature's own rows (scheduled task runs). Worker, cancel and recovery all settle
  through ``apps.runs.settle.run_settle``, so every finished run passes here exactly once.
- ``after_settle``: ``async fn(RunOutcome)`` once the row is settled and before the stream
  ends (goal continuation, memory learning). A failing hook is logged and skipped: the run
  is already recorded, and one feature must not stop the next.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from apps.runs.models import Run

logger = logging.getLogger(__name__)

# The statuses a run's hooks see (``SettledRun.status``, ``RunOutcome.status``), for the
# feature apps, which do not read the engine's models.
RunStatus = Run.Status
ACTIVE_RUN_STATUSES = Run.ACTIVE_STATUSES


@dataclass(frozen=True)
class Admission:
    user: Any
    request: Any  # the RunCreate being admitted
    requested_model: str  # the model the request itself named ("" when none)


@dataclass
class RunStart:
    meta: dict  # what the worker's claim read: thread_id, owner_id, kwargs, metadata, …
    kwargs: dict
    config: dict
    context: dict  # the graph's runtime context; hooks may add to it
    app_config: Any
    events: list = field(default_factory=list)  # JournalEvents with dict content, for the journal and the stream


@dataclass(frozen=True)
class SettledRun:
    run_id: str
    thread_id: str
    status: str
    error: str
    stop_reason: str
    finished_at: datetime
    metadata: dict


@dataclass
class TurnEnd:
    run_id: str
    thread_id: str
    meta: dict
    config: dict
    context: dict
    values: Any  # the last values the turn streamed
    graph: Any
    app_config: Any
    publish: Callable  # async (event, data): onto the run's stream, when the client asked for that mode
    count_usage: Callable  # (kind, model_name, usage_metadata): a model call the hook made


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    thread_id: str
    status: str
    stop_reason: str
    meta: dict
    context: dict
    config: dict
    values: Any  # the last values the graph streamed
    graph: Any  # None when the run failed before its graph was built
    app_config: Any  # None when the run failed before its config was read

    @property
    def succeeded(self) -> bool:
        return self.status == Run.Status.SUCCESS


@dataclass(frozen=True)
class Settling:
    """What a ``before_settle`` hook adds to the run's settle: journal events and, for a run
    that would succeed, a reason to record it as an error instead."""

    events: list
    error: str = ""


class HookPoint:
    def __init__(self, name: str) -> None:
        self.name = name
        self._fns: list[Callable] = []

    def register(self, fn: Callable) -> Callable:
        # ready() may run more than once (tests re-populate apps): registering twice is a no-op.
        if fn not in self._fns:
            self._fns.append(fn)
        return fn

    def unregister(self, fn: Callable) -> None:
        if fn in self._fns:
            self._fns.remove(fn)

    def __iter__(self):
        return iter(tuple(self._fns))

    def __bool__(self) -> bool:
        return bool(self._fns)


agent_resolvers = HookPoint("agent_resolvers")
admission_checks = HookPoint("admission_checks")
before_run = HookPoint("before_run")
continuations = HookPoint("continuations")
before_settle = HookPoint("before_settle")
settled = HookPoint("settled")
after_settle = HookPoint("after_settle")


def agent_for(user: Any, assistant_id: str | None) -> dict | None:
    for resolve in agent_resolvers:
        agent = resolve(user=user, assistant_id=assistant_id)
        if agent is not None:
            return agent
    return None


def admit(admission: Admission) -> None:
    for check in admission_checks:
        check(admission)


async def run_starting(start: RunStart) -> None:
    for hook in before_run:
        await hook(start)


async def next_turn(turn: TurnEnd) -> dict | None:
    for hook in continuations:
        graph_input = await hook(turn)
        if graph_input is not None:
            return graph_input
    return None


async def run_settling(outcome: RunOutcome) -> Settling:
    events: list = []
    error = ""
    for hook in before_settle:
        answer = await hook(outcome)
        if isinstance(answer, Settling):
            events.extend(answer.events)
            error = error or answer.error
        else:
            events.extend(answer or ())
    return Settling(events=events, error=error)


def run_settled(run: SettledRun) -> None:
    for hook in settled:
        hook(run)


async def run_finished(outcome: RunOutcome) -> None:
    for hook in after_settle:
        try:
            await hook(outcome)
        except Exception:
            logger.warning("After-settle hook %s failed for run %s", getattr(hook, "__qualname__", hook), outcome.run_id, exc_info=True)
