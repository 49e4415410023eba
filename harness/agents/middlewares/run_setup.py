"""Run-level setup as one graph step: the ``before_agent`` hooks of several middlewares.

Every ``before_agent`` hook of its own is a LangGraph step: task preparation, a checkpoint
write and a ``values`` event, before the model has started. The lead agent's setup
(sanitizing the input, the thread's directories, new uploads, the sandbox) was four such
steps, about a third of an instant model's time to first token. ``RunSetupMiddleware``
runs those hooks in order inside one step. Each part sees the state as the parts before it
left it, and the step writes what each part wrote, so the thread ends up in the same state
as with separate steps.

The parts' sync hooks run together in one worker thread: they touch the file system
(directories, the uploads listing, the sandbox) and one hop is cheaper than one per part.
"""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langgraph.channels.delta import DeltaChannel
from langgraph.types import Command


def channel_reducers(state_schema: type) -> dict[str, Callable[[Any, Any], Any]]:
    """Keys of ``state_schema`` whose updates merge through a reducer (``Annotated[T, fn]``)."""
    reducers = {}
    for key, hint in typing.get_type_hints(state_schema, include_extras=True).items():
        while typing.get_origin(hint) in (typing.NotRequired, typing.Required):
            hint = typing.get_args(hint)[0]
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, DeltaChannel):  # its reducer folds a list of writes
                reducers[key] = lambda current, update, fold=meta.reducer: fold(current, [update])
                break
            if callable(meta):
                reducers[key] = meta
                break
    return reducers


_OTHER_HOOKS = ("before_model", "abefore_model", "after_model", "aafter_model", "after_agent", "aafter_agent",
                "wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call")


class RunSetupMiddleware(AgentMiddleware):
    """The ``before_agent`` hooks of ``parts``, in order, as one ``RunSetup.before_agent`` step.

    Parts must not jump (``can_jump_to``) and must have no other hooks or tools: this
    middleware exposes only their ``before_agent``, so anything else would silently be lost.
    """

    def __init__(self, parts: Sequence[AgentMiddleware], *, state_schema: type):
        super().__init__()
        for part in parts:
            if getattr(part.__class__.before_agent, "__can_jump_to__", None):
                raise ValueError(f"{part.name}.before_agent jumps; it needs a graph step of its own")
            others = [hook for hook in _OTHER_HOOKS if getattr(type(part), hook) is not getattr(AgentMiddleware, hook)]
            if others or getattr(part, "tools", None):
                raise ValueError(f"{part.name} has {', '.join(others) or 'tools'} besides before_agent; add it as a middleware of its own")
        self.parts = list(parts)
        self._reducers = channel_reducers(state_schema)

    @property
    def name(self) -> str:
        return "RunSetup"

    def before_agent(self, state: dict[str, Any], runtime: Any) -> Any:
        view = dict(state)
        updates: list[dict[str, Any]] = []
        for part in self.parts:
            update = part.before_agent(view, runtime)
            if not update:
                continue
            if isinstance(update, Command):
                raise TypeError(f"{part.name}.before_agent returned a Command; it needs a graph step of its own")
            updates.append(dict(update))
            for key, value in update.items():
                reducer = self._reducers.get(key)
                view[key] = reducer(view.get(key), value) if reducer is not None and view.get(key) is not None else value
        return self._as_writes(updates)

    async def abefore_agent(self, state: dict[str, Any], runtime: Any) -> Any:
        return await asyncio.to_thread(self.before_agent, state, runtime)

    def _as_writes(self, updates: list[dict[str, Any]]) -> Any:
        """One update when the parts wrote different keys (the usual case); otherwise one
        write per part, which LangGraph applies in order through each key's reducer. A
        last-value key takes one write per step, so only its last one is kept."""
        if not updates:
            return None
        written: set[str] = set()
        repeated: set[str] = set()
        for update in updates:
            repeated |= written & update.keys()
            written |= update.keys()
        if not repeated:
            return {key: value for update in updates for key, value in update.items()}
        last_writer = {key: i for i, update in enumerate(updates) for key in update if key not in self._reducers}
        writes = []
        for i, update in enumerate(updates):
            kept = {k: v for k, v in update.items() if k in self._reducers or last_writer[k] == i}
            if kept:
                writes.append(Command(update=kept))
        return writes
