"""A client following a run that no server has started yet (apps/runs/follow.py).

Beat's firings are admitted in the Celery worker and offered to the servers (handoff.py); for
about half a second no server holds the run's stream. A client that subscribes then must get
the run's events once a server takes it, not an ``end`` that says the run is over.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from apps.runs.follow import follow_run
from apps.runs.handoff import OFFERED
from apps.runs.journal import JournalEvent, journal_insert
from apps.runs.models import Run
from apps.runs.runtime import get_runtime
from apps.threads.services import thread_create
from harness.runtime.stream_bridge import END, HEARTBEAT
from tests.apps.runs.test_websocket import connect, events_until_end
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.django_db(transaction=True)]


class LoneEndsSeen:
    """The runtime's bridge, telling the test when it has answered a run with a lone ``end``
    (so the client is known to have subscribed before the run's stream existed)."""

    def __init__(self, bridge, run_id: str):
        self.bridge, self.run_id, self.seen = bridge, run_id, threading.Event()

    def __getattr__(self, name):
        return getattr(self.bridge, name)

    async def subscribe_batches(self, run_id, **kwargs):
        async for batch in self.bridge.subscribe_batches(run_id, **kwargs):
            if run_id == self.run_id and [(i.event, i.id) for i in batch] == [(END, None)]:
                self.seen.set()
            yield batch


@pytest.fixture
def offered_run(user, monkeypatch):
    """A run a stream-less process offered to the servers, and the bridge that watches it."""
    thread = thread_create(owner=user)
    run = Run.objects.create(thread=thread, owner=user, status=Run.Status.PENDING, lease_owner=OFFERED,
                             lease_expires_at=timezone.now() + timezone.timedelta(minutes=5))
    runtime = get_runtime()
    watched = LoneEndsSeen(runtime.bridge, str(run.pk))
    monkeypatch.setattr(runtime, "bridge", watched)
    return run, watched


async def _subscribed(user, run) -> object:
    ws, connected, _ = await connect(user, run.thread_id)
    assert connected
    await ws.send_json_to({"type": "subscribe", "run_id": str(run.pk)})
    return ws


async def _until_seen(watched) -> None:
    assert await asyncio.to_thread(watched.seen.wait, HANG_SECONDS), "the client never subscribed"


def _set_status(run, status: str, **fields) -> None:
    Run.objects.filter(pk=run.pk).update(status=status, **fields)


async def test_a_client_of_an_offered_run_gets_its_events_once_a_server_takes_it(user, offered_run):
    run, watched = offered_run
    run_id = str(run.pk)
    ws = await _subscribed(user, run)
    await _until_seen(watched)
    # What a server's hand-off poll does when it takes the run, then the run itself.
    watched.publish(run_id, "metadata", {"run_id": run_id, "thread_id": run.thread_id})
    await database_sync_to_async(_set_status)(run, Run.Status.RUNNING)
    watched.publish(run_id, "values", {"messages": [{"type": "ai", "content": "taken and answered"}]})
    await database_sync_to_async(_set_status)(run, Run.Status.SUCCESS, finished_at=timezone.now())
    watched.end(run_id)
    events = await events_until_end(ws)
    await ws.disconnect(timeout=HANG_SECONDS)
    assert [e["event"] for e in events] == ["metadata", "values", "end"]
    assert events[1]["data"]["messages"][0]["content"] == "taken and answered"
    assert all(e["id"] for e in events)  # the run's own end, not the bridge's "not held here"


async def test_a_client_of_an_offered_run_that_recovery_fails_is_told_why(user, offered_run):
    run, watched = offered_run
    ws = await _subscribed(user, run)
    await _until_seen(watched)
    await database_sync_to_async(journal_insert)(
        thread_id=run.thread_id, run_id=str(run.pk),
        events=[JournalEvent("run.error", "error", "no process took the run", {"error_type": "orphan_recovered"})])
    await database_sync_to_async(_set_status)(run, Run.Status.ERROR, error="no process took the run",
                                              finished_at=timezone.now())
    events = await events_until_end(ws)
    await ws.disconnect(timeout=HANG_SECONDS)
    assert [(e["event"], e["data"]) for e in events] == [
        ("error", {"error": "orphan_recovered", "message": "no process took the run", "name": "orphan_recovered"}),
        ("end", None)]


async def test_heartbeats_keep_the_wait_open_and_a_run_that_ends_unseen_ends_the_stream(offered_run):
    run, watched = offered_run
    stream = follow_run(str(run.pk), None, heartbeat=0)  # a heartbeat due at every look
    first = await anext(stream)
    await database_sync_to_async(_set_status)(run, Run.Status.SUCCESS, finished_at=timezone.now())
    rest = [batch async for batch in stream if batch[0].event != HEARTBEAT]

    assert [i.event for i in first] == [HEARTBEAT]
    # It ran to its end somewhere this process cannot read from: the client reads its state.
    assert [[(i.event, i.id) for i in batch] for batch in rest] == [[(END, None)]]
