"""What the Redis stream bridge adds to the contract: several processes (here: bridge instances)
sharing one run's stream, expiry, exact trimming and use from several event loops."""

import asyncio
import socket
import threading
import uuid

import pytest

from harness.runtime.stream_bridge import END, GAP
from tests.support.waiting import HANG_SECONDS, wait_until

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
    items = await asyncio.wait_for(follower, HANG_SECONDS)
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
    # Read on a busy machine, the key may already be gone (-2); it must never lack a TTL (-1).
    left = raw.pttl(key)
    assert left == -2 or 0 < left <= 200, left
    await asyncio.to_thread(wait_until, lambda: not bridge.has_run("r"), "the ended stream to expire", interval=0.05)
    assert [i.event for i in await _collect(bridge, "r")] == [END]


async def test_long_streams_are_compacted_and_another_instance_resumes_them_without_loss(make_bridge, raw):
    producer, server = make_bridge(max_events=4), make_bridge(max_events=4)
    ids = [producer.publish("r", "updates", {"step": i}) for i in range(40)]
    assert raw.xlen(producer.key("r")) <= 4  # the older entries moved to the compacted list
    assert raw.llen(producer.keys("r")[1]) > 0
    assert raw.ttl(producer.keys("r")[1]) > 3600  # expires with the stream
    producer.end("r")
    assert 0 < raw.pttl(producer.keys("r")[1]) <= 60_000
    for cut in (0, 17, 36, 38):
        items = await _collect(server, "r", last_event_id=ids[cut])
        assert [i.data for i in items] == [{"step": i} for i in range(cut + 1, 40)] + [None], cut


async def test_past_the_safety_cap_the_oldest_entries_are_lost_and_said_to_be(make_bridge, raw):
    # A producer whose compaction never catches up (here: a window larger than the cap).
    producer, server = make_bridge(max_events=100, max_raw_events=3), make_bridge(max_events=100, max_raw_events=3)
    ids = [producer.publish("r", "values", i) for i in range(7)]
    assert raw.xlen(producer.key("r")) == 3
    gap = await _collect(server, "r", last_event_id=ids[2])
    assert [i.event for i in gap] == [GAP] and gap[0].id is None and gap[0].data["code"] == "stream_replay_gap"
    assert (gap[0].data["earliest_available_event_id"], gap[0].data["latest_available_event_id"]) == (ids[4], ids[6])
    producer.end("r")  # loses ids[4] in turn
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


async def test_a_run_produced_here_reaches_other_processes_under_the_same_ids(make_bridge):
    producer, elsewhere = make_bridge(), make_bridge()
    producer.produce_here("r")
    first = producer.publish("r", "metadata", {"run_id": "r"})  # the admitting request thread
    follower = asyncio.create_task(_collect(elsewhere, "r"))
    local_follower = asyncio.create_task(_collect(producer, "r"))
    for i in range(20):
        await producer.apublish("r", "messages", i)
    last = await producer.aend("r")
    local = await asyncio.wait_for(local_follower, HANG_SECONDS)
    remote = await asyncio.wait_for(follower, HANG_SECONDS)
    assert [(i.id, i.event, i.data) for i in remote] == [(i.id, i.event, i.data) for i in local]
    assert [i.data for i in local] == [{"run_id": "r"}, *range(20), None]
    assert (local[0].id, local[-1].id) == (first, last)
    # A reconnect through another process resumes from an id the producer handed out.
    assert [i.data for i in await _collect(elsewhere, "r", last_event_id=local[10].id)] == [*range(10, 20), None]
    assert elsewhere.is_ended("r") and producer.is_ended("r")


async def test_subscribers_next_to_the_run_do_not_wait_for_redis(make_bridge):
    with socket.socket() as s:  # a port nobody listens on: Redis is down
        s.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{s.getsockname()[1]}/0"
    from harness.runtime.redis_bridge import RedisStreamBridge

    bridge = RedisStreamBridge(dead, key_prefix="test:down:")
    bridge.send_retry_seconds = 0.3
    bridge.produce_here("r")
    await bridge.apublish("r", "values", 1)
    await bridge.aend("r")
    assert [i.data for i in await _collect(bridge, "r")] == [1, None]
    assert bridge.flush(5)  # given up on, with a warning, not retried forever
    bridge.close()


async def test_an_end_written_elsewhere_first_leaves_one_end(make_bridge, raw):
    producer, canceller = make_bridge(), make_bridge()
    producer.produce_here("r")
    producer.publish("r", "metadata", {})
    assert producer.flush(5)
    canceller.end("r")  # e.g. another server settled the run before it started here
    await producer.aend("r")
    assert producer.flush(5)
    assert [fields["event"] for _, fields in raw.xrange(producer.key("r"))] == ["metadata", END]


async def test_events_produced_here_survive_redis_forgetting_the_publish_script(make_bridge, raw):
    producer, elsewhere = make_bridge(), make_bridge()
    producer.produce_here("r")
    producer.publish("r", "values", 1)
    assert producer.flush(5)
    raw.script_flush()  # as after a Redis restart
    producer.publish("r", "values", 2)
    producer.end("r")
    assert producer.flush(5)
    assert [i.data for i in await _collect(elsewhere, "r")] == [1, 2, None]


async def test_a_batch_sent_twice_is_written_once(make_bridge, raw):
    producer = make_bridge()
    producer.produce_here("r")
    producer.publish("r", "values", 1)
    producer.publish("r", "values", 2)
    assert producer.flush(5)
    from harness.runtime.redis_bridge import _PUBLISH_LUA

    entries = raw.xrange(producer.key("r"))
    # As after a reply lost on the way back: the sender sends the same entries again.
    producer._send(raw, raw.register_script(_PUBLISH_LUA), [("r", entry_id, "values", int(fields["data"])) for entry_id, fields in entries])
    assert raw.xrange(producer.key("r")) == entries


async def _collect(bridge, run_id, **kwargs):
    return [item async for item in bridge.subscribe(run_id, **kwargs)]
