"""The stream bridge contract: ids, replay, gaps, many subscribers, heartbeats, end.

Shared behaviour runs against every implementation (Redis ones where a Redis is available, and
the memory bridge read from another process through the stream relay);
what only the in-memory bridge promises is tested on it alone at the end.
"""

import asyncio
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from harness.runtime.stream_bridge import END, GAP, HEARTBEAT, MemoryStreamBridge, StreamItem, subscribe_batches


async def collect(bridge, run_id, **kwargs):
    return [item async for item in bridge.subscribe(run_id, **kwargs)]


async def take(bridge, run_id, n, **kwargs):
    stream = bridge.subscribe(run_id, **kwargs)
    try:
        return [await anext(stream) for _ in range(n)]
    finally:
        await stream.aclose()


def id_key(event_id):
    ms, seq = event_id.split("-")
    return int(ms), int(seq)


class ThroughAPeer:
    """Publishes on one server process's bridge and reads through another's, as when a client's
    request lands on the process that does not execute the run: the stream relay's socket."""

    def __init__(self, owner, reader, socket_path):
        self.owner, self.reader, self.socket_path = owner, reader, socket_path

    def __getattr__(self, name):
        return getattr(self.owner, name)

    async def subscribe(self, *args, **kwargs):
        while not self.socket_path.exists():  # the owner's relay is starting on this loop
            await asyncio.sleep(0.01)
        async for item in self.reader.subscribe(*args, **kwargs):
            yield item

    async def subscribe_batches(self, *args, **kwargs):
        while not self.socket_path.exists():
            await asyncio.sleep(0.01)
        async for batch in self.reader.subscribe_batches(*args, **kwargs):
            yield batch


@pytest.fixture(params=["memory", "relayed", pytest.param("redis", marks=pytest.mark.redis),
                        pytest.param("redis, produced here", marks=pytest.mark.redis)])
async def make_bridge(request):
    """A factory, so tests can pick max_events/retain_after_end; every bridge it made is closed.
    "produced here" is the Redis bridge in the process that executes run "r": served from memory.
    "relayed" reads from another process's memory bridge through its stream relay."""
    made, relays = [], []

    def make(**kwargs):
        if request.param == "memory":
            bridge = MemoryStreamBridge(**kwargs)
        elif request.param == "relayed":
            from deerflow_site.server.stream_relay import RelayedStreamBridge

            directory = Path(tempfile.mkdtemp(prefix="relay-", dir="/tmp"))
            owner = RelayedStreamBridge(MemoryStreamBridge(**kwargs), directory, name="owner")
            relays.append(asyncio.ensure_future(owner.relay().serve_forever()))
            bridge = ThroughAPeer(owner, RelayedStreamBridge(MemoryStreamBridge(), directory, name="reader"), directory / "owner.sock")
        else:
            from harness.runtime.redis_bridge import RedisStreamBridge

            bridge = RedisStreamBridge(request.getfixturevalue("redis_url"), key_prefix=f"test:{uuid.uuid4().hex}:", **kwargs)
            if request.param == "redis, produced here":
                bridge.produce_here("r")
        made.append(bridge)
        return bridge

    yield make
    for bridge in made:
        if hasattr(bridge, "aclose"):
            await bridge.aclose()
    for relay in relays:
        relay.cancel()
    await asyncio.gather(*relays, return_exceptions=True)


async def test_ids_are_monotonic_and_replay_covers_everything_retained(make_bridge):
    bridge = make_bridge()
    ids = [bridge.publish("r", "values", {"n": i}) for i in range(3)]
    ids.append(bridge.end("r"))
    assert all(id_key(a) < id_key(b) for a, b in zip(ids, ids[1:]))
    items = await collect(bridge, "r")
    assert [i.event for i in items] == ["values", "values", "values", END]
    assert [i.id for i in items] == ids
    assert [i.data for i in items] == [{"n": 0}, {"n": 1}, {"n": 2}, None]
    resumed = await collect(bridge, "r", last_event_id=ids[1])
    assert [i.data for i in resumed] == [{"n": 2}, None]
    assert [i.id for i in resumed] == ids[2:]


async def test_async_publish_matches_sync_publish(make_bridge):
    bridge = make_bridge()
    first = await bridge.apublish("r", "values", {"text": "héllo", "list": [1, 2]})
    last = await bridge.aend("r")
    assert id_key(first) < id_key(last)
    items = await collect(bridge, "r")
    assert [(i.event, i.data, i.id) for i in items] == [("values", {"text": "héllo", "list": [1, 2]}, first), (END, None, last)]


async def test_live_subscribers_all_see_every_event_in_order(make_bridge):
    bridge = make_bridge()
    bridge.publish("r", "metadata", {})
    subscribers = [asyncio.create_task(collect(bridge, "r")) for _ in range(5)]
    await asyncio.sleep(0.01)
    for i in range(20):
        await bridge.apublish("r", "messages", i)
        if i % 7 == 0:
            await asyncio.sleep(0)
    await bridge.aend("r")
    results = await asyncio.wait_for(asyncio.gather(*subscribers), 5)
    for items in results:
        assert [i.data for i in items if i.event == "messages"] == list(range(20))
        assert items[-1].event == END


def chunk(text, message_id="ai-1", **extra):
    """A token chunk of one AI message, as the worker publishes it for `messages-tuple`."""
    message = {"content": text, "additional_kwargs": {}, "response_metadata": {}, "type": "AIMessageChunk", "name": None,
               "id": message_id, "tool_calls": [], "invalid_tool_calls": [], "usage_metadata": None,
               "tool_call_chunks": [], "chunk_position": None, **extra}
    return [message, {"langgraph_node": "model", "run_id": "r"}]


def args_chunk(args, *, name=None, call_id=None):
    """A piece of a streamed tool call's arguments."""
    return chunk("", tool_call_chunks=[{"name": name, "args": args, "id": call_id, "index": 0, "type": "tool_call_chunk"}])


def text_of(items, message_id="ai-1"):
    return "".join(i.data[0]["content"] for i in items if i.event == "messages" and i.data[0]["id"] == message_id)


async def test_a_cursor_older_than_the_recent_window_still_gets_everything_after_it(make_bridge):
    bridge = make_bridge(max_events=4)
    ids = [bridge.publish("r", "updates", {"step": i}) for i in range(30)]
    ids.append(bridge.end("r"))
    for cut in (0, 1, 13, 25, 28, 29):
        items = await collect(bridge, "r", last_event_id=ids[cut])
        assert [i.data for i in items] == [{"step": i} for i in range(cut + 1, 30)] + [None], cut
        assert [i.id for i in items] == ids[cut + 1:]


async def test_a_long_answer_resumed_anywhere_reassembles_to_the_same_text(make_bridge):
    """2,000 token chunks, far past the recent window: a client that saw the first k events live
    and resumes after the k-th id gets the rest of the text exactly, once, then `end`."""
    bridge = make_bridge()
    words = [f"w{i} " for i in range(2000)]
    published = []  # what a client following live saw, in order

    async def publish(event, data):
        published.append(StreamItem(event, data, await bridge.apublish("r", event, data)))

    await publish("metadata", {"run_id": "r"})
    for index, word in enumerate(words):
        await publish("messages", chunk(word))
        if index % 700 == 0:
            await publish("values", {"messages": index})
    await publish("values", {"messages": 2000})
    published.append(StreamItem(END, None, await bridge.aend("r")))
    whole = [i async for i in bridge.subscribe("r")]
    assert text_of(whole) == "".join(words) and whole[-1].event == END
    assert len(whole) < len(published) / 4  # the older chunks came back joined
    for cut in (0, 1, 5, 255, 256, 700, 1234, 1999, len(published) - 3, len(published) - 2):
        seen = published[: cut + 1]
        resumed = await collect(bridge, "r", last_event_id=seen[-1].id)
        assert text_of(seen) + text_of(resumed) == "".join(words), cut
        assert resumed[-1].event == END
        assert [i.data for i in seen + resumed if i.event == "values"][-1] == {"messages": 2000}
        assert len({i.id for i in resumed}) == len(resumed) and min(id_key(i.id) for i in resumed) > id_key(seen[-1].id)
    # After `end` there is nothing left to send.
    assert [i.event for i in await collect(bridge, "r", last_event_id=published[-1].id)] == [END]


async def test_streamed_tool_arguments_resume_to_the_same_call(make_bridge):
    bridge = make_bridge(max_events=8)
    pieces = ['{"pa', 'th": "/mnt/user-data/outputs/a.md", ', '"content": "', *(f"line {i}\\n" for i in range(40)), '"}']
    ids = [bridge.publish("r", "messages", args_chunk("", name="write_file", call_id="call-1"))]
    ids += [bridge.publish("r", "messages", args_chunk(piece)) for piece in pieces]
    bridge.end("r")
    resumed = await collect(bridge, "r", last_event_id=ids[2])
    args = "".join(i.data[0]["tool_call_chunks"][0]["args"] for i in resumed if i.event == "messages")
    assert args == "".join(pieces[2:])
    merged = [i for i in resumed if i.event == "messages"]
    assert len(merged) < len(pieces) - 2  # the older pieces came back joined, not one by one
    assert all(i.data[0]["tool_call_chunks"][0]["index"] == 0 for i in merged)


async def test_a_subscriber_that_falls_behind_the_recent_window_loses_nothing(make_bridge):
    bridge = make_bridge(max_events=4)
    bridge.publish("r", "updates", 0)
    stream = bridge.subscribe("r")
    assert (await anext(stream)).data == 0
    for i in range(1, 40):  # the subscriber is suspended meanwhile
        bridge.publish("r", "updates", i)
    bridge.end("r")
    assert [item.data async for item in stream] == list(range(1, 40)) + [None]


async def test_ids_never_issued_for_the_run_get_one_gap_saying_so(make_bridge):
    bridge = make_bridge()
    ids = [bridge.publish("r", "values", i) for i in range(2)]
    bridge.end("r")
    first_ms = int(ids[0].split("-")[0])
    for cursor in ("not-an-id", "abc", "1-999999", "99999999999999-9999", "99999999999999-99999999",
                   "1-99999999999999999999999", f"{first_ms - 1}-0"):
        items = await collect(bridge, "r", last_event_id=cursor)
        assert [i.event for i in items] == [GAP], cursor
        assert items[0].data["code"] == "stream_event_id_unknown" and items[0].data["requested_event_id"] == cursor


async def test_unknown_run_yields_a_lone_end_and_heartbeats_fill_silence(make_bridge):
    bridge = make_bridge()
    assert [(i.event, i.data) for i in await collect(bridge, "ghost")] == [(END, None)]
    assert not bridge.has_run("ghost") and not bridge.is_ended("ghost")
    bridge.publish("quiet", "metadata", {})
    seen = []
    async for item in bridge.subscribe("quiet", heartbeat=0.05):
        seen.append(item.event)
        if item.event == HEARTBEAT:
            assert item.id is None and item.data is None
            if seen.count(HEARTBEAT) == 2:
                bridge.end("quiet")
    assert seen[0] == "metadata" and seen.count(HEARTBEAT) == 2 and seen[-1] == END


async def test_publisher_on_another_thread_wakes_the_subscriber(make_bridge):
    bridge = make_bridge()
    bridge.publish("r", "metadata", {})
    task = asyncio.create_task(collect(bridge, "r"))
    await asyncio.sleep(0.01)

    def produce():
        for i in range(50):
            bridge.publish("r", "messages", i)
        bridge.end("r")

    thread = threading.Thread(target=produce)
    thread.start()
    items = await asyncio.wait_for(task, 5)
    thread.join()
    assert [i.data for i in items if i.event == "messages"] == list(range(50))


async def test_ended_streams_refuse_more_events_but_stay_replayable(make_bridge):
    bridge = make_bridge()
    bridge.publish("r", "values", 1)
    assert bridge.has_run("r") and not bridge.is_ended("r")
    bridge.end("r")
    assert bridge.is_ended("r")
    with pytest.raises(RuntimeError, match="already ended"):
        bridge.publish("r", "values", 2)
    with pytest.raises(RuntimeError, match="already ended"):
        await bridge.apublish("r", "values", 2)
    with pytest.raises(RuntimeError, match="already ended"):
        await bridge.aend("r")
    assert [i.data for i in await collect(bridge, "r")] == [1, None]


@pytest.mark.parametrize("heartbeat", [15.0, None])
async def test_resuming_after_the_last_event_of_an_ended_stream_ends_at_once(make_bridge, heartbeat):
    # A client whose connection dropped just after it read `end` (or whatever came last)
    # reconnects with that id: there is nothing left to send, so it gets `end` again rather
    # than heartbeats until it gives up.
    bridge = make_bridge()
    bridge.publish("r", "values", 1)
    last = bridge.end("r")
    items = await asyncio.wait_for(collect(bridge, "r", last_event_id=last, heartbeat=heartbeat), 10)
    assert [(i.event, i.data) for i in items] == [(END, None)]
    assert items[0].id == last  # the run is held: not the id-less `end` of a run unknown here


# -- in-memory only ------------------------------------------------------------------------


async def test_batches_carry_the_same_items_and_stop_after_end(make_bridge):
    bridge = make_bridge()
    for i in range(3):
        bridge.publish("r", "values", {"i": i})
    bridge.end("r")
    batches = [batch async for batch in subscribe_batches(bridge, "r")]
    assert [(item.event, item.data) for batch in batches for item in batch] == [
        ("values", {"i": 0}), ("values", {"i": 1}), ("values", {"i": 2}), (END, None)]
    assert all(batch for batch in batches) and batches[-1][-1].event == END
    assert [item.id for batch in batches for item in batch] == [item.id for item in await collect(bridge, "r")]


async def test_memory_hands_over_what_is_there_together_as_one_batch():
    bridge = MemoryStreamBridge()
    bridge.publish("r", "metadata", {})
    bridge.publish("r", "values", {"n": 1})
    stream = subscribe_batches(bridge, "r", heartbeat=None)
    first = await anext(stream)
    assert [item.event for item in first] == ["metadata", "values"]
    following = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    bridge.publish("r", "messages", ["chunk"])
    bridge.end("r")
    assert [item.event for item in await following] in (["messages", END], ["messages"])
    rest = [batch async for batch in stream]
    assert [item.event for batch in [await following, *rest] for item in batch] == ["messages", END]


async def test_memory_subscribers_that_hear_a_heartbeat_or_leave_hold_no_waiter():
    # A run streams for as long as it thinks: its waiters must not pile up meanwhile.
    bridge = MemoryStreamBridge()
    bridge.publish("r", "metadata", {})
    stream = subscribe_batches(bridge, "r", heartbeat=0.01)
    assert [item.event for item in await anext(stream)] == ["metadata"]
    assert [item.event for item in await anext(stream)] == [HEARTBEAT]
    assert bridge._runs["r"].waiters == []
    waiting = asyncio.ensure_future(anext(stream))
    while not bridge._runs["r"].waiters:
        await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert bridge._runs["r"].waiters == []
    bridge.publish("r", "values", {"n": 1})
    bridge.end("r")
    assert [item.event for item in await collect(bridge, "r")] == ["metadata", "values", END]


async def test_memory_ids_count_from_zero_per_run():
    bridge = MemoryStreamBridge()
    ids = [bridge.publish("r", "values", i) for i in range(3)] + [bridge.end("r")]
    assert [int(i.split("-")[1]) for i in ids] == [0, 1, 2, 3]
    assert bridge.publish("other", "values", 0).endswith("-0")


async def test_memory_ended_streams_are_swept_at_most_once_a_second():
    bridge = MemoryStreamBridge(retain_after_end=0.0)
    bridge.publish("r", "values", 1)
    bridge.end("r")
    await asyncio.sleep(0.01)
    bridge.publish("other", "values", 1)
    assert bridge.has_run("r")  # swept less than a second ago: not yet
    bridge._last_sweep -= 1.0  # as if a second had passed
    bridge.publish("other", "values", 2)  # any write sweeps expired streams
    assert not bridge.has_run("r") and bridge.has_run("other")
