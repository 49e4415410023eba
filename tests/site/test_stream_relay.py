"""The stream relay between an installation's server processes, beyond the bridge contract
(which test_stream_bridge.py runs through it): a client leaving, peers that are gone, cancels
and where the sockets live. Two bridges in one process stand for two server processes."""

import asyncio
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.runtime.stream_bridge import END, MemoryStreamBridge
from deerflow_site.server.stream_relay import RelayedStreamBridge, relay_directory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def pair():
    """(owner, reader, cancels): the owner executes runs and answers on its socket."""
    directory = Path(tempfile.mkdtemp(prefix="relay-", dir="/tmp"))
    owner = RelayedStreamBridge(MemoryStreamBridge(), directory, name="owner")
    reader = RelayedStreamBridge(MemoryStreamBridge(), directory, name="reader")
    cancels = []

    def on_cancel(run_id, action):
        cancels.append((run_id, action))
        return owner.has_run(run_id)

    serving = asyncio.ensure_future(owner.relay(on_cancel=on_cancel).serve_forever())
    while not (directory / "owner.sock").exists():
        await asyncio.sleep(0.01)
    yield owner, reader, cancels
    serving.cancel()
    await asyncio.gather(serving, return_exceptions=True)


def waiting_subscribers(bridge, run_id):
    return len(bridge.local._runs[run_id].waiters)


async def test_a_reader_that_leaves_ends_the_owners_subscription(pair):
    owner, reader, _ = pair
    owner.publish("r", "values", 1)
    stream = reader.subscribe("r", heartbeat=None)
    assert (await anext(stream)).data == 1
    follow = asyncio.ensure_future(anext(stream))  # waits for an event that does not come
    while not waiting_subscribers(owner, "r"):
        await asyncio.sleep(0.01)
    follow.cancel()
    await asyncio.gather(follow, return_exceptions=True)
    await stream.aclose()
    # the peer notices the closed socket although the run says nothing more
    for _ in range(200):
        if not waiting_subscribers(owner, "r"):
            break
        await asyncio.sleep(0.01)
    assert waiting_subscribers(owner, "r") == 0


async def test_a_socket_left_by_a_stopped_process_is_passed_over(pair):
    owner, reader, _ = pair
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(owner.directory / "a-stopped-process.sock"))  # bound, never listening: refused
    dead.close()
    (owner.directory / "b-not-a-socket.sock").write_text("")
    owner.publish("r", "values", "from the owner")
    owner.end("r")
    items = [i async for i in reader.subscribe("r")]
    assert [(i.event, i.data) for i in items] == [("values", "from the owner"), (END, None)]
    # a run nobody holds ends at once, as on one process
    assert [(i.event, i.data) async for i in reader.subscribe("unknown")] == [(END, None)]


OWNER_PROCESS = """
import asyncio, sys
from pathlib import Path
from harness.runtime.stream_bridge import MemoryStreamBridge
from deerflow_site.server.stream_relay import RelayedStreamBridge

async def main():
    bridge = RelayedStreamBridge(MemoryStreamBridge(), Path(sys.argv[1]), name="owner")
    bridge.publish("r", "values", 1)
    await bridge.relay().serve_forever()

asyncio.run(main())
"""


async def test_a_peer_that_dies_mid_stream_ends_the_relayed_stream():
    directory = Path(tempfile.mkdtemp(prefix="relay-", dir="/tmp"))
    owner = subprocess.Popen([sys.executable, "-c", OWNER_PROCESS, str(directory)], cwd=ROOT)
    try:
        for _ in range(500):
            if (directory / "owner.sock").exists():
                break
            await asyncio.sleep(0.02)
        reader = RelayedStreamBridge(MemoryStreamBridge(), directory, name="reader")
        stream = reader.subscribe("r", heartbeat=None)
        assert (await anext(stream)).data == 1
        owner.kill()  # as the OOM killer would: the kernel closes its sockets
        rest = await asyncio.wait_for(_drain(stream), 10)
        assert [(i.event, i.data) for i in rest] == [(END, None)]
    finally:
        owner.kill()
        owner.wait(10)


async def _drain(stream):
    return [item async for item in stream]


async def test_cancel_reaches_the_process_that_executes_the_run(pair):
    owner, reader, cancels = pair
    owner.publish("r", "metadata", {})
    assert await asyncio.to_thread(reader.cancel_elsewhere, "r", "rollback") is True
    assert cancels == [("r", "rollback")]
    assert await asyncio.to_thread(reader.cancel_elsewhere, "not-running-anywhere", "interrupt") is False


def test_sockets_live_under_the_home_unless_its_path_is_too_long(tmp_path):
    assert relay_directory(Path("/srv/deerflow")) == Path("/srv/deerflow/run/streams")
    long_home = Path("/" + "x" * 120)
    fallback = relay_directory(long_home)
    assert len(str(fallback / "1234567.sock")) < 108
    assert fallback == relay_directory(long_home) != relay_directory(Path("/" + "y" * 120))  # one per home
