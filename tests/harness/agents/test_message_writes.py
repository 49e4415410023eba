"""The delta-mode messages reducer: add_messages' meaning per write, the same list however
the writes are batched on replay, and the same ids on every replay."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from harness.agents.message_writes import merge_message_writes


def fresh_writes():
    """Writes as a replay deserializes them: new objects, id-less where the node left them so."""
    return [
        [HumanMessage("hi", id="h1")],
        [AIMessage("thinking", id="a1"), ToolMessage("result", tool_call_id="c1")],
        [AIMessage("hello", id="a1")],  # replaces a1 in place
        [RemoveMessage(id="h1"), HumanMessage("follow-up")],
        [AIMessage("answer")],
        [RemoveMessage(id="a1")],
        [AIMessage("again", id="a1")],  # a removed id comes back at the end
    ]


def shape(messages):
    return [(type(m).__name__, m.content) for m in messages]


def test_each_write_means_what_add_messages_makes_of_it():
    state, reference = [], []
    for write, ref_write in zip(fresh_writes(), fresh_writes(), strict=True):
        state = merge_message_writes(state, [write])
        reference = add_messages(reference, ref_write)
    assert shape(state) == shape(reference) == [
        ("ToolMessage", "result"), ("HumanMessage", "follow-up"), ("AIMessage", "answer"), ("AIMessage", "again")]


@pytest.mark.parametrize("cut", [1, 3, 5])
def test_batching_does_not_change_the_result_or_the_ids(cut):
    one_by_one = []
    for write in fresh_writes():
        one_by_one = merge_message_writes(one_by_one, [write])
    writes = fresh_writes()
    batched = merge_message_writes(merge_message_writes([], writes[:cut]), writes[cut:])
    assert shape(batched) == shape(one_by_one)
    assert [m.id for m in batched] == [m.id for m in one_by_one]
    assert all(m.id for m in batched)


def test_id_less_messages_get_distinct_ids_that_a_replay_repeats():
    first = merge_message_writes([], [[HumanMessage("a")], [HumanMessage("a")], [AIMessage("b"), AIMessage("b")]])
    second = merge_message_writes([], [[HumanMessage("a")], [HumanMessage("a")], [AIMessage("b"), AIMessage("b")]])
    assert [m.id for m in first] == [m.id for m in second]
    assert len({m.id for m in first}) == 4


def test_remove_all_keeps_only_what_follows_it():
    state = merge_message_writes([], [[HumanMessage("old", id="o")]])
    state = merge_message_writes(state, [[HumanMessage("x", id="x"), RemoveMessage(id=REMOVE_ALL_MESSAGES), AIMessage("summary", id="s")]])
    assert shape(state) == [("AIMessage", "summary")]


def test_removing_an_unknown_id_is_an_error_as_in_add_messages():
    with pytest.raises(ValueError, match="doesn't exist"):
        merge_message_writes([HumanMessage("a", id="a")], [[RemoveMessage(id="nope")]])


def test_the_prior_state_is_not_changed():
    state = [HumanMessage("a", id="a")]
    merge_message_writes(state, [[AIMessage("b", id="b")], [RemoveMessage(id="a")]])
    assert shape(state) == [("HumanMessage", "a")]


def test_the_writes_own_messages_keep_no_id():
    # LangGraph folds a single task's writes for that task's view of the state; an id given
    # there must not stick, or two parallel tool results would get the same id and one of
    # them would replace the other.
    state = [AIMessage("calls", id="a")]
    first, second = ToolMessage("r1", tool_call_id="1"), ToolMessage("r2", tool_call_id="2")
    merge_message_writes(state, [[first]])
    merge_message_writes(state, [[second]])
    assert first.id is None and second.id is None
    merged = merge_message_writes(state, [[first], [second]])
    assert shape(merged)[1:] == [("ToolMessage", "r1"), ("ToolMessage", "r2")] and merged[1].id != merged[2].id


def test_a_list_changed_in_place_is_not_taken_for_the_one_the_reducer_returned():
    # The reducer remembers the index of the lists it returned, to skip rebuilding it when
    # LangGraph hands one back; a list someone changed in place must get a fresh index.
    state = merge_message_writes([], [[HumanMessage("a", id="a"), AIMessage("b", id="b")]])
    state[0] = HumanMessage("z", id="z")
    merged = merge_message_writes(state, [[HumanMessage("z, edited", id="z")]])
    assert shape(merged) == [("HumanMessage", "z, edited"), ("AIMessage", "b")]
    again = merge_message_writes(merged, [[AIMessage("a reply", id="d")], [HumanMessage("z, again", id="z")]])
    assert shape(again) == [("HumanMessage", "z, again"), ("AIMessage", "b"), ("AIMessage", "a reply")]
