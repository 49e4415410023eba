"""Writing a whole state onto a thread's head empties the channels the wanted state lacks,
whatever their declared type: an optional reduced field (``str | None``) too, which made a
regenerate on such a thread a 500 (found by tests/site/test_api_conformance.py)."""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired, TypedDict

from langgraph.checkpoint.memory import InMemorySaver

from harness.runtime.checkpoint_state import schema_reader, write_onto_head


def _latest(old, new):
    return new if new is not None else old


class State(TypedDict):
    messages: Annotated[list, operator.add]
    stop_reason: NotRequired[Annotated[str | None, _latest]]


async def test_a_head_with_an_optional_reduced_field_is_rewritten_to_the_wanted_state():
    graph = schema_reader(State, InMemorySaver())
    config = {"configurable": {"thread_id": "t-1"}}
    await write_onto_head(graph, config, {"messages": ["first"]})
    await write_onto_head(graph, config, {"messages": ["first", "second"], "stop_reason": "goal_reached"})

    await write_onto_head(graph, config, {"messages": ["first"]})

    values = (await graph.aget_state(config)).values
    assert values["messages"] == ["first"]
    assert values.get("stop_reason") is None
