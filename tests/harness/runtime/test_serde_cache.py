from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from harness.runtime.serde_cache import CachingSerializer


def big_checkpoint():
    messages = [HumanMessage("question " * 20, id=f"h{i}") if i % 2 else AIMessage("answer " * 20, id=f"a{i}") for i in range(200)]
    return {"channel_values": {"messages": _DeltaSnapshot(messages), "title": "t"}, "channel_versions": {"messages": 3}}


def test_a_large_blob_decodes_once_and_each_read_gets_its_own_containers():
    serde = CachingSerializer()
    blob = serde.dumps_typed(big_checkpoint())
    first = serde.loads_typed(blob)
    first["channel_values"]["messages"].value.append(HumanMessage("added by a reader"))
    first["channel_values"]["title"] = "changed"
    second = serde.loads_typed((blob[0], bytes(blob[1])))  # equal bytes, another object
    assert len(second["channel_values"]["messages"].value) == 200 and second["channel_values"]["title"] == "t"
    assert second["channel_values"]["messages"].value[5] is first["channel_values"]["messages"].value[5]
    assert serde.loads_typed(serde.dumps_typed({"small": 1})) == {"small": 1}


def test_the_cache_is_bounded_by_bytes():
    serde = CachingSerializer(max_bytes=1)
    blob = serde.dumps_typed(big_checkpoint())
    serde.loads_typed(blob)
    assert serde._bytes <= 1 and not serde._cache


def test_a_message_is_dumped_once_and_each_caller_gets_its_own_dict():
    from harness.runtime.serialize import _dumped, to_jsonable

    message = AIMessage("answer", id="dump-once")
    first = to_jsonable({"messages": [message]})["messages"][0]
    first["content"] = "changed by a caller"
    again = to_jsonable(message)
    assert again["content"] == "answer" and again["id"] == "dump-once"
    assert _dumped[id(message)][0] is message


def test_blobs_alike_in_the_bytes_that_pick_their_slot_are_still_told_apart():
    serde = CachingSerializer()
    first = serde.dumps_typed(big_checkpoint())
    cut = next(i for i in range(1, len(first[1]) - 300) if first[1][i:i + 8] == b"question" and all(j % 1024 for j in range(i, i + 8)))
    other = (first[0], first[1][:cut] + b"QUESTION" + first[1][cut + 8:])  # same length, same sampled bytes
    assert serde.loads_typed(first)["channel_values"]["messages"].value[1].content.startswith("question")
    assert serde.loads_typed(other)["channel_values"]["messages"].value[1].content.startswith("QUESTION")
    assert serde.loads_typed(first)["channel_values"]["messages"].value[1].content.startswith("question")
