"""Tool calls of one model message that touch the thread's files run in the message's order.

``create_agent`` hands each tool call of a model message to LangGraph as its own task, and
the tasks run at the same time (threads in ``invoke``, asyncio tasks in ``ainvoke``). A reply
that calls ``write_file`` and then ``present_files`` on the same path could therefore present
before the write landed: "does not exist", a failed card, no file. Real models batch calls
like that, so the calls must behave as if run one after another.

Each tool declares whether it reads or writes the thread's files (``harness.tools.file_access``).
Call *k* of a message waits, before anything else of it runs, until every earlier call of
the same message that it conflicts with (one of the two writes) has finished, whether it
succeeded, failed, was refused or was cancelled. Reads among themselves and calls of tools
that declare nothing (web search, the subagent ``task``, MCP, memory) stay parallel. Order by
the call's index in the message is the point: a lock alone would serialize, in any order.

This is the outermost tool wrapper, so every call of a step passes through it and settles:
a call that an inner layer refuses (approval backstop, skills' allowed-tools) still releases
the calls after it. Why it cannot hang:

- The calls of a step are computed from the state the step started with: the message's
  calls without a result yet, the ones the tools node runs. Approval denials and repaired
  calls already have results, so nobody waits for them.
- LangGraph starts a step's tasks in message order (a FIFO thread pool; asyncio tasks made
  in order, a FIFO semaphore under ``max_concurrency``), so an earlier call has started by
  the time a later one could be waiting for it; the earliest unfinished call never waits.
- A call settles in ``finally``: on errors, interrupts (``GraphInterrupt``) and cancellation.
- A step that LangGraph resumes (after an interrupt inside a tool call, a retry) runs only
  the calls that did not finish before; which ones finished is not in the state, so those
  calls are not ordered (``__pregel_resuming`` marks that first step of a resumed run).
  Approvals pause before the tools step, so the approved calls run in a fresh, ordered step.
- Backstop: an earlier call that has not even started within ``arrival_timeout`` seconds is
  taken not to run in this step (logged as a warning). One that started is waited for as
  long as it runs: a long ``bash`` still finishes before the ``present_files`` after it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage

from harness.tools.file_access import READ, conflicts, thread_file_access

try:  # the flag LangGraph sets on the first step of a resumed run
    from langgraph._internal._constants import CONFIG_KEY_RESUMING
except ImportError:  # pragma: no cover - a LangGraph that moved it
    CONFIG_KEY_RESUMING = "__pregel_resuming"

logger = logging.getLogger(__name__)

DEFAULT_ARRIVAL_TIMEOUT = 30.0
# Steps whose calls did not all arrive (a step that failed before starting them all) are
# dropped oldest first beyond this many, if none of their calls is still running.
MAX_STEPS = 256


@dataclass(frozen=True, slots=True)
class _Plan:
    key: tuple[str, ...]
    call_id: str
    name: str
    expected: frozenset[str]  # the step's calls that touch files: each settles here
    before: tuple[str, ...]  # the earlier ones this call must wait for, in message order


class _Step:
    """The calls of one message in one step: who started, who finished, who waits."""

    __slots__ = ("expected", "arrived", "settled", "cond", "waiters")

    def __init__(self, expected: frozenset[str]) -> None:
        self.expected = expected
        self.arrived: set[str] = set()
        self.settled: set[str] = set()
        self.cond = threading.Condition()
        self.waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def missing(self, before: tuple[str, ...], overdue: bool) -> list[str]:
        """Earlier calls still to wait for; once ``overdue``, not those that never started."""
        return [c for c in before if c not in self.settled and not (overdue and c not in self.arrived)]


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _messages(state: Any) -> list[Any]:
    if isinstance(state, Mapping):
        return state.get("messages") or []
    return getattr(state, "messages", None) or []


class ToolCallOrderMiddleware(AgentMiddleware):
    """Runs a message's file-touching tool calls in its order; the rest stay parallel."""

    def __init__(self, *, arrival_timeout: float = DEFAULT_ARRIVAL_TIMEOUT) -> None:
        super().__init__()
        self.arrival_timeout = arrival_timeout
        self._steps: OrderedDict[tuple[str, ...], _Step] = OrderedDict()
        self._lock = threading.Lock()
        self._access: dict[str, str | None] = {}

    # -- which calls of the step touch files ---------------------------------------------

    def _access_of(self, name: str, runtime: Any) -> str | None:
        try:
            return self._access[name]
        except KeyError:
            pass
        tool = next((t for t in getattr(runtime, "tools", None) or () if getattr(t, "name", None) == name), None)
        access = self._access[name] = thread_file_access(tool)
        return access

    def _plan(self, request: Any) -> _Plan | None:
        access = thread_file_access(request.tool)
        call_id = request.tool_call.get("id")
        if access is None or not call_id:
            return None
        runtime = request.runtime
        configurable = (getattr(runtime, "config", None) or {}).get("configurable") or {}
        if configurable.get(CONFIG_KEY_RESUMING):
            return None
        messages = _messages(request.state)
        answered: set[str] = set()
        message: AIMessage | None = None
        for m in reversed(messages):
            if isinstance(m, ToolMessage):
                answered.add(m.tool_call_id)
            elif isinstance(m, AIMessage):
                message = m
                break
        if message is None:
            return None
        touching: list[tuple[str, str]] = []
        position = None
        for c in message.tool_calls:
            cid = c.get("id")
            if not cid or cid in answered:
                continue
            other = access if cid == call_id else self._access_of(c.get("name") or "", runtime)
            if other is None:
                continue
            if cid == call_id and position is None:
                position = len(touching)
            touching.append((cid, other))
        if position is None or len(touching) < 2 or all(a == READ for _, a in touching):
            return None
        before = tuple(dict.fromkeys(cid for cid, a in touching[:position] if cid != call_id and conflicts(a, access)))
        info = getattr(runtime, "execution_info", None)
        thread = str(configurable.get("thread_id") or getattr(info, "thread_id", None) or "")
        key = (thread, str(getattr(info, "checkpoint_id", None) or ""), message.id or touching[0][0])
        return _Plan(key, call_id, request.tool_call.get("name") or "", frozenset(cid for cid, _ in touching), before)

    # -- the step's table ----------------------------------------------------------------

    def _enter(self, plan: _Plan) -> _Step:
        with self._lock:
            step = self._steps.get(plan.key)
            if step is None:
                step = self._steps[plan.key] = _Step(plan.expected)
                if len(self._steps) > MAX_STEPS:
                    self._evict()
        with step.cond:
            step.arrived.add(plan.call_id)
        return step

    def _evict(self) -> None:
        for key, step in list(self._steps.items())[: len(self._steps) - MAX_STEPS]:
            with step.cond:
                idle = step.arrived <= step.settled  # none of its calls is running or waiting
            if idle:
                del self._steps[key]

    def _settle(self, plan: _Plan, step: _Step) -> None:
        with step.cond:
            step.settled.add(plan.call_id)
            step.cond.notify_all()
            waiters, step.waiters = step.waiters, []
            done = step.expected <= step.settled
        for loop, fut in waiters:
            try:
                loop.call_soon_threadsafe(_wake, fut)
            except RuntimeError:  # that loop has closed: nobody is waiting there any more
                pass
        if done:
            with self._lock:
                if self._steps.get(plan.key) is step:
                    del self._steps[plan.key]

    def _note_wait(self, plan: _Plan, missing: list[str]) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("tool call %s (%s) waits for %s", plan.call_id, plan.name, ", ".join(missing),
                         extra={"deerflow_tool_call_id": plan.call_id, "deerflow_waits_for": list(missing)})

    def _note_overdue(self, plan: _Plan, step: _Step) -> None:
        absent = [c for c in plan.before if c not in step.arrived and c not in step.settled]
        if absent:
            logger.warning("tool call %s (%s) stopped waiting for %s, which did not start within %gs",
                           plan.call_id, plan.name, ", ".join(absent), self.arrival_timeout)

    # -- waiting -------------------------------------------------------------------------

    def _wait(self, plan: _Plan, step: _Step) -> None:
        deadline = time.monotonic() + self.arrival_timeout
        noted = overdue = False
        with step.cond:
            while missing := step.missing(plan.before, overdue):
                if not noted:
                    noted = True
                    self._note_wait(plan, missing)
                left = deadline - time.monotonic()
                if left <= 0 and not overdue:
                    overdue = True
                    self._note_overdue(plan, step)
                    continue
                step.cond.wait(left if not overdue else None)

    async def _await(self, plan: _Plan, step: _Step) -> None:
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + self.arrival_timeout
        noted = overdue = False
        while True:
            with step.cond:
                missing = step.missing(plan.before, overdue)
                if not missing:
                    return
                fut: asyncio.Future[None] = loop.create_future()
                step.waiters.append((loop, fut))
            if not noted:
                noted = True
                self._note_wait(plan, missing)
            left = deadline - time.monotonic()
            if left <= 0 and not overdue:
                overdue = True
                self._note_overdue(plan, step)
                continue
            try:
                await asyncio.wait({fut}, timeout=left if not overdue else None)
            finally:
                fut.cancel()  # a no-op once woken; otherwise settle skips it

    # -- the hooks -----------------------------------------------------------------------

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        plan = self._plan(request)
        if plan is None:
            return handler(request)
        step = self._enter(plan)
        try:
            if plan.before:
                self._wait(plan, step)
            return handler(request)
        finally:
            self._settle(plan, step)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        plan = self._plan(request)
        if plan is None:
            return await handler(request)
        step = self._enter(plan)
        try:
            if plan.before:
                await self._await(plan, step)
            return await handler(request)
        finally:
            self._settle(plan, step)


__all__ = ["ToolCallOrderMiddleware"]
