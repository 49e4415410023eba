"""Reading and rewriting thread state safely in either checkpoint mode.

Three rules DeerFlow learned with delta checkpoints (docs/runs.md, "Checkpoint storage"):

- A checkpoint written in delta mode lacks ``messages`` in its channel values (or holds a
  snapshot marker): read in full mode it would silently show an empty or partial thread.
  ``ensure_readable`` refuses that with :class:`CheckpointModeMismatch`. The other way is
  safe: delta mode reads a full checkpoint's list as the base for the writes after it, so
  an old thread migrates on its next turn.
- Forks are LangGraph's own in both modes. DeerFlow had to turn delta forks into writes on
  the head because replays took in the writes an abandoned sibling left on the shared
  parent (its #4458); LangGraph 1.2.24's savers replay only the fork's own line, which
  tests/apps/threads/test_checkpoint_modes.py checks (two runs from one checkpoint, both
  durabilities, SQLite and PostgreSQL) so an upgrade that brings the bug back fails there.
- Whole-state replacement goes through a state-only graph with the agent's own schema and
  ``Overwrite`` for reducer channels, never a hand-written checkpoint: ancestry stays intact
  and the head stays idle (the graph's one node leads straight to the end).
"""

from __future__ import annotations

import types
import typing
import weakref
from typing import Any

from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import END, START, StateGraph
from langgraph.types import Overwrite

STATE_NODE = "deerflow_state"


class CheckpointModeMismatch(RuntimeError):
    """The thread was written in delta mode and this process runs in full mode."""


def written_in_delta(checkpoint_tuple: Any) -> bool:
    checkpoint = checkpoint_tuple.checkpoint
    values = checkpoint.get("channel_values") or {}
    if isinstance(values.get("messages"), _DeltaSnapshot):
        return True
    if "messages" in (checkpoint.get("channel_versions") or {}) and "messages" not in values:
        return True
    return bool(((checkpoint_tuple.metadata or {}).get("counters_since_delta_snapshot") or {}).get("messages"))


def graph_mode(graph: Any) -> str:
    return "delta" if isinstance(graph.channels.get("messages"), DeltaChannel) else "full"


def ensure_readable(checkpoint_tuple: Any, mode: str, thread_id: str) -> None:
    if checkpoint_tuple is not None and mode == "full" and written_in_delta(checkpoint_tuple):
        raise CheckpointModeMismatch(
            f"Thread {thread_id} was stored in delta checkpoint mode and this server runs checkpoints.mode: full; "
            "set checkpoints.mode: delta in config.yaml to read it (full mode would show its messages incomplete)")


_state_graphs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _compile_state_graph(schema: type) -> Any:
    builder = StateGraph(schema)
    builder.add_node(STATE_NODE, lambda state: None)
    builder.add_edge(START, STATE_NODE)
    builder.add_edge(STATE_NODE, END)
    return builder.compile()


def state_graph(graph: Any) -> Any:
    """A graph with ``graph``'s state schema and one node that does nothing, on its
    checkpointer: it reads every channel the agent has, and its writes leave the head idle."""
    cached = _state_graphs.get(graph)
    if cached is None:
        cached = _state_graphs[graph] = _compile_state_graph(graph.builder.state_schema)
    return cached.copy(update={"checkpointer": graph.checkpointer})


_schema_graphs: dict[type, Any] = {}


def schema_reader(schema: type, checkpointer: Any) -> Any:
    """A state-only graph for ``schema`` (the lead agent's thread state): reads a thread when
    the agent itself cannot be built (no model configured) or is not needed (recovery).
    Channels only a middleware adds are not in it."""
    cached = _schema_graphs.get(schema)
    if cached is None:
        cached = _schema_graphs[schema] = _compile_state_graph(schema)
    return cached.copy(update={"checkpointer": checkpointer})


def _replacement(graph: Any, values: dict[str, Any], head_values: dict[str, Any]) -> dict[str, Any]:
    """Channel writes that make the head hold exactly ``values``."""
    update: dict[str, Any] = {}
    for key in set(values) | set(head_values):
        channel = graph.channels.get(key)
        if channel is None or key.startswith("__") or type(channel).__name__ == "EphemeralValue":
            continue
        reducing = isinstance(channel, (BinaryOperatorAggregate, DeltaChannel))
        if key in values:
            update[key] = Overwrite(values[key]) if reducing else values[key]
        else:  # the head has something the wanted state had not yet: back to empty
            update[key] = Overwrite(_empty(channel.typ)) if reducing else None
    return update


def _empty(typ: Any) -> Any:
    """The empty value of a channel's type: what ``typ()`` gives (``[]`` for a list), or for an
    optional one (``str | None``, which cannot be called) ``None``."""
    try:
        return typ()
    except TypeError:
        members = typing.get_args(typ) if typing.get_origin(typ) in (types.UnionType, typing.Union) else ()
        if type(None) in members or not members:
            return None
        return _empty(members[0])


async def write_onto_head(graph: Any, thread_config: dict, values: dict[str, Any]) -> dict:
    """Make ``values`` the thread's state as a new checkpoint on its current head (for
    whole-state replacement such as compaction or restoring an edit); returns
    the new checkpoint's config. ``thread_config`` names the thread (any checkpoint id in it
    is ignored: the head is the parent)."""
    conf = {k: v for k, v in (thread_config.get("configurable") or {}).items() if k not in ("checkpoint_id", "checkpoint_map")}
    head_config = {**thread_config, "configurable": conf}
    head = await graph.aget_state(head_config)
    update = _replacement(graph, values, dict(head.values or {}))
    return await state_graph(graph).aupdate_state(head.config if head.config else head_config, update, as_node=STATE_NODE)


async def materialized_values(graph: Any, config: dict) -> dict[str, Any] | None:
    snapshot = await graph.aget_state(config)
    return dict(snapshot.values) if snapshot is not None and snapshot.created_at is not None else None
