"""The thread websocket, through Channels' communicator."""

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from apps.runs.routing import websocket_urlpatterns
from apps.threads.services import thread_create
from harness.testing import call, tool_reply
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.django_db(transaction=True)]

APP = URLRouter(websocket_urlpatterns)


async def connect(user, thread_id):
    communicator = WebsocketCommunicator(APP, f"/ws/threads/{thread_id}/")
    communicator.scope["user"] = user
    connected, code = await communicator.connect(timeout=HANG_SECONDS)
    return communicator, connected, code


async def events_until_end(communicator):
    events = []
    while True:
        message = await communicator.receive_json_from(timeout=HANG_SECONDS)
        if message["type"] == "event":
            events.append(message)
            if message["event"] == "end":
                return events


async def test_run_subscribe_resume_and_cancel(user, scripted_agent):
    scripted_agent("streamed over a socket", tool_reply(call("slow", seconds=30)))
    await database_sync_to_async(thread_create)(owner=user, thread_id="ws-thread")
    ws, connected, _ = await connect(user, "ws-thread")
    assert connected

    await ws.send_json_to({"type": "subscribe"})
    assert await ws.receive_json_from(timeout=HANG_SECONDS) == {"type": "idle"}

    await ws.send_json_to({"type": "run", "payload": {"input": {"messages": [{"role": "user", "content": "hi"}]}, "stream_mode": ["messages-tuple", "values"]}})
    created = await ws.receive_json_from(timeout=HANG_SECONDS)
    assert created["type"] == "run_created"
    run_id = created["run"]["run_id"]
    events = await events_until_end(ws)
    assert events[0]["event"] == "metadata"
    text = "".join(e["data"][0]["content"] for e in events if e["event"] == "messages")
    assert text == "streamed over a socket"

    # Resuming after an id sends only what came after it, without repeats.
    cut = events[2]["id"]
    await ws.send_json_to({"type": "subscribe", "run_id": run_id, "after": cut})
    resumed = await events_until_end(ws)
    assert [e["id"] for e in resumed] == [e["id"] for e in events[3:]]

    await ws.send_json_to({"type": "run", "payload": {"input": {"messages": [{"role": "user", "content": "slow please"}]}}})
    second = (await ws.receive_json_from(timeout=HANG_SECONDS))["run"]["run_id"]
    await ws.receive_json_from(timeout=HANG_SECONDS)  # metadata
    await ws.send_json_to({"type": "cancel"})
    rest = await events_until_end(ws)
    assert rest[-1]["event"] == "end"
    from apps.runs.models import Run

    run = await database_sync_to_async(Run.objects.get)(pk=second)
    assert run.status == "interrupted"
    await ws.disconnect(timeout=HANG_SECONDS)


async def test_refusals(user, other_user):
    await database_sync_to_async(thread_create)(owner=user, thread_id="alice-only")
    for who, expected in ((AnonymousUser(), 4401), (other_user, 4404)):
        ws, connected, _ = await connect(who, "alice-only")
        # Accepted, then closed: a client sees the code only after the handshake.
        assert connected
        assert await ws.receive_output(timeout=HANG_SECONDS) == {"type": "websocket.close", "code": expected}
    ws, connected, _ = await connect(user, "alice-only")
    await ws.send_json_to({"type": "run", "payload": {"stream_mode": "events"}})
    error = await ws.receive_json_from(timeout=HANG_SECONDS)
    assert error["type"] == "error" and error["status"] == 422 and "unsupported stream mode 'events'" in error["detail"]
    await ws.send_json_to({"type": "cancel"})
    assert (await ws.receive_json_from(timeout=HANG_SECONDS))["detail"] == "Thread alice-only has no active run"
    await ws.disconnect(timeout=HANG_SECONDS)
