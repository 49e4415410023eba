"""The in-memory stream bridge: ids, replay, gaps, many subscribers, heartbeats, end."""

import asyncio
import threading

import pytest

from harness.runtime.stream_bridge import END, GAP, HEARTBEAT, MemoryStreamBridge


async def collect(bridge, run_id, **kwargs):
    return [item async for item in bridge.subscribe(run_id, **kwargs)]


async def test_ids_are_monotonic_and_replay_covers_everything_retained():
    bridge = MemoryStreamBridge()
    ids = [bridge.publish("r", "values", {"n": i}) for i in range(3)]
    ids.append(bridge.end("r"))
    assert [int(i.split("-")[1]) for i in ids] == [0, 1, 2, 3]
    items = await collect(bridge, "r")
    assert [i.event for i in items] == ["values", "values", "values", END]
    assert [i.id for i in items] == ids
    resumed = await collect(bridge, "r", last_event_id=ids[1])
    assert [i.data for i in resumed] == [{"n": 2}, None]


async def test_live_subscribers_all_see_every_event_in_order():
    bridge = MemoryStreamBridge()
    bridge.publish("r", "metadata", {})
    subscribers = [asyncio.create_task(collect(bridge, "r")) for _ in range(5)]
    await asyncio.sleep(0.01)
    for i in range(20):
        bridge.publish("r", "messages", i)
        if i % 7 == 0:
            await asyncio.sleep(0)
    bridge.end("r")
    results = await asyncio.gather(*subscribers)
    for items in results:
        assert [i.data for i in items if i.event == "messages"] == list(range(20))
        assert items[-1].event == END


async def test_a_cursor_older_than_the_buffer_gets_one_gap_and_no_end():
    bridge = MemoryStreamBridge(max_events=4)
    first = bridge.publish("r", "values", 0)
    for i in range(1, 10):
        bridge.publish("r", "values", i)
    items = await collect(bridge, "r", last_event_id=first)
    assert len(items) == 1 and items[0].event == GAP and items[0].id is None
    gap = items[0].data
    assert gap["code"] == "stream_replay_gap" and gap["requested_event_id"] == first
    assert gap["earliest_available_event_id"].endswith("-6") and gap["latest_available_event_id"].endswith("-9")
    # Rejoining from the latest retained id follows the live stream again.
    follower = asyncio.create_task(collect(bridge, "r", last_event_id=gap["latest_available_event_id"]))
    await asyncio.sleep(0.01)
    bridge.publish("r", "values", 10)
    bridge.end("r")
    assert [i.data for i in await follower] == [10, None]


async def test_unknown_run_yields_a_lone_end_and_heartbeats_fill_silence():
    bridge = MemoryStreamBridge()
    assert [i.event for i in await collect(bridge, "ghost")] == [END]
    bridge.publish("quiet", "metadata", {})
    seen = []
    async for item in bridge.subscribe("quiet", heartbeat=0.05):
        seen.append(item.event)
        if item.event == HEARTBEAT and seen.count(HEARTBEAT) == 2:
            bridge.end("quiet")
    assert seen[0] == "metadata" and seen.count(HEARTBEAT) == 2 and seen[-1] == END


async def test_publisher_on_another_thread_wakes_the_subscriber():
    bridge = MemoryStreamBridge()
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


async def test_ended_streams_refuse_more_events_and_are_swept():
    bridge = MemoryStreamBridge(retain_after_end=60)
    bridge.publish("r", "values", 1)
    bridge.end("r")
    with pytest.raises(RuntimeError):
        bridge.publish("r", "values", 2)
    assert [i.data for i in await collect(bridge, "r")] == [1, None]  # still replayable
    bridge.retain_after_end = 0.0
    await asyncio.sleep(0.01)
    bridge.publish("other", "values", 1)  # any write sweeps expired streams
    assert not bridge.has_run("r")
