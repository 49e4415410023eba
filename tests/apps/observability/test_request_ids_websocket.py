"""Runs started over the websocket take the handshake's X-Request-ID and traceparent."""

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from apps.runs.models import Run
from apps.threads.services import thread_create
from tests.apps.runs.test_websocket import APP, events_until_end
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.django_db(transaction=True)]


async def _run_over_socket(user, thread_id, headers):
    ws = WebsocketCommunicator(APP, f"/ws/threads/{thread_id}/", headers=headers)
    ws.scope["user"] = user
    connected, _ = await ws.connect(timeout=HANG_SECONDS)
    assert connected
    await ws.send_json_to({"type": "run", "payload": {"input": {"messages": [{"role": "user", "content": "hi"}]}}})
    created = await ws.receive_json_from(timeout=HANG_SECONDS)
    await events_until_end(ws)
    await ws.disconnect(timeout=HANG_SECONDS)
    return await database_sync_to_async(Run.objects.get)(pk=created["run"]["run_id"])


async def test_the_handshakes_request_id_names_the_run(user, scripted_agent):
    scripted_agent("one", "two")
    await database_sync_to_async(thread_create)(owner=user, thread_id="ws-req")
    run = await _run_over_socket(user, "ws-req", [(b"x-request-id", b"ws-req-9")])
    assert run.request_id == "ws-req-9"
    fresh = await _run_over_socket(user, "ws-req", [])
    assert fresh.request_id and fresh.request_id != "ws-req-9"


async def test_the_handshakes_traceparent_is_continued_by_its_runs(user, scripted_agent):
    scripted_agent("one", "two")
    await database_sync_to_async(thread_create)(owner=user, thread_id="ws-trace")
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    run = await _run_over_socket(user, "ws-trace", [(b"traceparent", traceparent.encode())])
    assert (run.trace_id, run.traceparent) == ("4bf92f3577b34da6a3ce929d0e0e4736", traceparent)
    fresh = await _run_over_socket(user, "ws-trace", [])
    assert fresh.traceparent == "" and fresh.trace_id not in ("", run.trace_id)
