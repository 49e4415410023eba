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


async def connect(user, thread_id, query=""):
    communicator = WebsocketCommunicator(APP, f"/ws/threads/{thread_id}/{query}")
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


def _thread_row(thread_id):
    from apps.threads.models import Thread

    return Thread.objects.filter(pk=thread_id).values("owner_id", "assistant_id", "metadata").first()


def _runs_on(thread_id):
    from apps.runs.models import Run

    return Run.objects.filter(thread_id=thread_id).count()


HI = {"input": {"messages": [{"role": "user", "content": "hi"}]}, "stream_mode": ["messages-tuple", "values"]}


async def test_a_new_chat_socket_creates_its_thread_with_the_first_run(user, scripted_agent):
    scripted_agent("the first answer")
    ws, connected, _ = await connect(user, "fresh-chat", "?new=1")
    assert connected
    await ws.send_json_to({"type": "run", "payload": HI, "thread": {"metadata": {"mode": "pro", "owner_id": 99}}})
    created = await ws.receive_json_from(timeout=HANG_SECONDS)
    assert created["type"] == "run_created" and created["run"]["thread_id"] == "fresh-chat"
    events = await events_until_end(ws)
    assert "".join(e["data"][0]["content"] for e in events if e["event"] == "messages") == "the first answer"
    row = await database_sync_to_async(_thread_row)("fresh-chat")
    # Ownership stays the server's, whatever the metadata says.
    assert row == {"owner_id": user.pk, "assistant_id": "lead_agent", "metadata": {"mode": "pro"}}

    # The thread exists now: a later run on the same socket needs no "thread", and one that
    # still sends it (a retried first message) gets a run on the same thread, metadata untouched.
    scripted_agent("second", "third")
    await ws.send_json_to({"type": "run", "payload": HI})
    assert (await ws.receive_json_from(timeout=HANG_SECONDS))["type"] == "run_created"
    await events_until_end(ws)
    await ws.send_json_to({"type": "run", "payload": HI, "thread": {"metadata": {"mode": "fast"}}})
    assert (await ws.receive_json_from(timeout=HANG_SECONDS))["type"] == "run_created"
    await events_until_end(ws)
    assert (await database_sync_to_async(_thread_row)("fresh-chat"))["metadata"] == {"mode": "pro"}
    assert await database_sync_to_async(_runs_on)("fresh-chat") == 3
    await ws.disconnect(timeout=HANG_SECONDS)


async def test_a_new_chat_socket_refuses_bad_input_and_writes_nothing(user, scripted_agent):
    scripted_agent("never")
    ws, connected, _ = await connect(user, "draft-chat", "?new=1")
    assert connected
    # Nothing to follow on a thread that does not exist yet.
    await ws.send_json_to({"type": "subscribe"})
    assert await ws.receive_json_from(timeout=HANG_SECONDS) == {"type": "idle"}
    refusals = [
        ({"thread": "yes"}, "thread: must be an object"),
        ({"thread": {"metadata": ["mode", "pro"]}}, "thread.metadata: must be an object"),
        ({"thread": {"metadata": {}, "owner": 3}}, "thread: unknown key 'owner'"),
        ({"thread": {"metadata": {"mode": "turbo"}}}, "metadata.mode: one of fast, thinking, plan, pro"),
        ({"thread": {}, "payload": {**HI, "stream_mode": "events"}}, "unsupported stream mode 'events'"),
        # Refused after the thread's insert (a resume on a thread that asked nothing): the
        # insert is rolled back with the run.
        ({"thread": {}, "payload": {"command": {"resume": "yes"}}}, "is not waiting for input"),
    ]
    for extra, detail in refusals:
        await ws.send_json_to({"type": "run", "payload": HI, **extra})
        error = await ws.receive_json_from(timeout=HANG_SECONDS)
        assert error["type"] == "error" and error["status"] == 422 and detail in error["detail"], (extra, error)
    assert await database_sync_to_async(_thread_row)("draft-chat") is None
    # Without "thread", a run on a thread that does not exist is not found, as before.
    await ws.send_json_to({"type": "run", "payload": HI})
    assert await ws.receive_json_from(timeout=HANG_SECONDS) == {"type": "error", "status": 404, "detail": "Thread draft-chat not found"}
    assert await database_sync_to_async(_thread_row)("draft-chat") is None
    await ws.disconnect(timeout=HANG_SECONDS)

    # An id that can never name a thread is refused at once, like a missing thread without ?new=1.
    for thread_id, query in (("no.dots", "?new=1"), ("missing-chat", "")):
        ws, connected, _ = await connect(user, thread_id, query)
        assert connected
        assert await ws.receive_output(timeout=HANG_SECONDS) == {"type": "websocket.close", "code": 4404}


async def test_someone_elses_thread_id_looks_like_a_free_one_and_is_not_found(user, other_user, scripted_agent):
    scripted_agent("never")
    await database_sync_to_async(thread_create)(owner=other_user, thread_id="bobs-chat", metadata={"mode": "fast"})
    answers = []
    for thread_id in ("bobs-chat", "nobodys-chat"):
        ws, connected, _ = await connect(user, thread_id, "?new=1")
        assert connected  # both accepted: the socket does not tell a taken id from a free one
        await ws.send_json_to({"type": "subscribe"})
        answers.append(await ws.receive_json_from(timeout=HANG_SECONDS))
        await ws.send_json_to({"type": "cancel"})
        answers.append((await ws.receive_json_from(timeout=HANG_SECONDS))["status"])
        await ws.disconnect(timeout=HANG_SECONDS)
    assert answers == [{"type": "idle"}, 404] * 2

    ws, _, _ = await connect(user, "bobs-chat", "?new=1")
    await ws.send_json_to({"type": "run", "payload": HI, "thread": {"metadata": {"mode": "pro"}}})
    assert await ws.receive_json_from(timeout=HANG_SECONDS) == {"type": "error", "status": 404, "detail": "Thread bobs-chat not found"}
    await ws.disconnect(timeout=HANG_SECONDS)
    # Bob's thread is as it was: no run of Alice's, his metadata and ownership kept.
    assert await database_sync_to_async(_thread_row)("bobs-chat") == {"owner_id": other_user.pk, "assistant_id": "", "metadata": {"mode": "fast"}}
    assert await database_sync_to_async(_runs_on)("bobs-chat") == 0
