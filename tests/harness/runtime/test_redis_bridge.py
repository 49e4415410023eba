"""What the Redis stream bridge adds to the contract: several processes (here: bridge instances)
sharing one run's stream, expiry, exact trimming and use from several event loops."""

import asyncio
import threading
import uuid

import pytest

from harness.runtime.stream_bridge import END, GAP

pytestmark = pytest.mark.redis


@pytest.fixture
async def make_bridge(redis_url):
    """Bridges sharing one key prefix, as processes configured alike would."""
    from harness.runtime.redis_bridge import RedisStreamBridge

    prefix = f"test:{uuid.uuid4().hex}:"
    made = []

    def make(**kwargs):
        bridge = RedisStreamBridge(redis_url, key_prefix=prefix, **kwargs)
        made.append(bridge)
        return bridge

    yield make
    for bridge in made:
        await bridge.aclose()


@pytest.fixture
def raw(redis_url):
    import redis

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


async def test_a_second_instance_resumes_after_an_id_without_loss_or_duplicates(make_bridge):
    producer, server = make_bridge(), make_bridge()
    ids = [producer.publish("r", "messages", i) for i in range(5)]
    follower = asyncio.create_task(_collect(server, "r", last_event_id=ids[2]))
    await asyncio.sleep(0.05)
    for i in range(5, 40):
        await producer.apublish("r", "messages", i)
    await producer.aend("r")
    items = await asyncio.wait_for(follower, 5)
    assert [i.data for i in items] == list(range(3, 40)) + [None]
    assert len({i.id for i in items}) == len(items)
    assert server.has_run("r") and server.is_ended("r")


async def test_publish_after_end_is_refused_from_another_instance(make_bridge):
    first, second = make_bridge(), make_bridge()
    first.publish("r", "values", 1)
    second.end("r")
    with pytest.raises(RuntimeError, match="already ended"):
        first.publish("r", "values", 2)
    with pytest.raises(RuntimeError, match="already ended"):
        await first.apublish("r", "values", 2)
    assert [i.data for i in await _collect(first, "r")] == [1, None]


async def test_streams_expire_after_end_and_carry_a_safety_ttl_while_running(make_bridge, raw):
    bridge = make_bridge(retain_after_end=0.2)
    bridge.publish("r", "values", 1)
    key = bridge.key("r")
    assert raw.ttl(key) > 3600  # a worker that dies before `end` does not leak the stream
    bridge.end("r")
    assert 0 < raw.pttl(key) <= 200
    await asyncio.sleep(0.3)
    assert not bridge.has_run("r")
    assert [i.event for i in await _collect(bridge, "r")] == [END]


async def test_trimming_is_exact_and_gaps_are_detected_across_instances(make_bridge, raw):
    producer, server = make_bridge(max_events=3), make_bridge(max_events=3)
    ids = [producer.publish("r", "values", i) for i in range(7)]
    assert raw.xlen(producer.key("r")) == 3
    assert raw.xinfo_stream(producer.key("r"))["max-deleted-entry-id"] == ids[3]
    gap = await _collect(server, "r", last_event_id=ids[2])
    assert [i.event for i in gap] == [GAP] and gap[0].id is None
    assert (gap[0].data["earliest_available_event_id"], gap[0].data["latest_available_event_id"]) == (ids[4], ids[6])
    producer.end("r")  # trims ids[4] in turn
    assert [i.data for i in await _collect(server, "r", last_event_id=ids[4])] == [5, 6, None]


async def test_publishing_on_one_loop_while_another_threads_loop_subscribes(make_bridge):
    bridge = make_bridge()
    await bridge.apublish("r", "metadata", {"run_id": "r"})
    subscribed = threading.Event()
    result: dict = {}

    def serve():
        async def main():
            stream = bridge.subscribe("r")
            items = [await anext(stream)]
            subscribed.set()
            items += [item async for item in stream]
            await bridge.aclose()  # this loop's client, closed on its own loop
            return items

        result["items"] = asyncio.run(main())

    thread = threading.Thread(target=serve)
    thread.start()
    assert await asyncio.to_thread(subscribed.wait, 5)
    for i in range(30):
        await bridge.apublish("r", "messages", i)
    await bridge.aend("r")
    await asyncio.to_thread(thread.join, 5)
    assert not thread.is_alive()
    items = result["items"]
    assert items[0].data == {"run_id": "r"}
    assert [i.data for i in items[1:-1]] == list(range(30)) and items[-1].event == END
    # Closing from the other loop released every client; they are made again on demand.
    assert [i.event for i in await _collect(bridge, "r")][-1] == END


async def _collect(bridge, run_id, **kwargs):
    return [item async for item in bridge.subscribe(run_id, **kwargs)]
