"""The thread state schema for a checkpoint mode (``checkpoints.mode`` in config.yaml).

``full`` stores the whole message list in every checkpoint (LangGraph's default): storage
grows with the square of a thread's length. ``delta`` makes ``messages`` a LangGraph
``DeltaChannel``: a checkpoint stores only that step's new messages, with a full snapshot
every ``snapshot_frequency`` updates so a read replays a bounded number of writes.

No ``from __future__ import annotations`` here: the channel object in the annotation must
be built when the class is, with this call's snapshot frequency.
"""

import functools
from typing import Annotated, Literal, Required

from langchain_core.messages import AnyMessage
from langgraph.channels.delta import DeltaChannel

from harness.agents.message_writes import merge_message_writes
from harness.agents.thread_state import ThreadState

CheckpointMode = Literal["full", "delta"]


@functools.cache
def thread_state_schema(mode: CheckpointMode = "full", snapshot_frequency: int = 50) -> type:
    if mode == "full":
        return ThreadState
    if mode != "delta":
        raise ValueError(f"unknown checkpoint mode {mode!r}; use full or delta")

    class DeltaThreadState(ThreadState):
        messages: Required[Annotated[list[AnyMessage], DeltaChannel(merge_message_writes, list, snapshot_frequency=snapshot_frequency)]]

    return DeltaThreadState
