"""JSON that cannot be stored and read back is refused at the door (422, nothing written), and
a row stored before the door was shut never takes a list down."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from apps.runs.models import Run, RunEvent
from apps.threads.models import Thread
from tests.support.waiting import HANG_SECONDS

pytestmark = pytest.mark.django_db(transaction=True)

SURROGATE = '"\\ud800"'  # the JSON text of a lone surrogate, as a client would send it
DEEP = "[" * 5000 + "]" * 5000  # 10 KB of nesting

# (method, path, body with {X} where the hostile value goes)
ENTRY_POINTS = [
    ("post", "/api/threads", '{"metadata": {"note": X}}'),
    ("patch", "/api/threads/{tid}", '{"metadata": {"note": X}}'),
    ("post", "/api/threads/search", '{"metadata": {"note": X}}'),
    ("post", "/api/threads/{tid}/state", '{"values": {"messages": [{"role": "user", "content": X}]}}'),
    ("post", "/api/threads/{tid}/history", '{"before": X}'),
    ("post", "/api/threads/{tid}/runs", '{"input": {"messages": [{"role": "user", "content": X}]}}'),
    ("post", "/api/threads/{tid}/runs/wait", '{"input": {"messages": [{"role": "user", "content": X}]}}'),
    ("post", "/api/threads/{tid}/runs/stream", '{"input": {"messages": [{"role": "user", "content": X}]}}'),
    ("post", "/api/runs/wait", '{"input": {"messages": [{"role": "user", "content": X}]}}'),
    ("post", "/api/threads/{tid}/runs", '{"metadata": {X: 1}, "input": {"messages": []}}'),
    ("put", "/api/threads/{tid}/artifacts/outputs/notes.md", '{"content": X, "expected_sha256": "' + "0" * 64 + '"}'),
    ("post", "/api/scheduled-tasks", '{"title": "t", "prompt": X, "cron": "0 9 * * *"}'),
    ("post", "/api/assistants/search", '{"metadata": {"note": X}}'),
]


def _call(client, method, path, body):
    return getattr(client, method)(path, data=body, content_type="application/json")


@pytest.fixture
def tid(user_client):
    return user_client.post("/api/threads", {"metadata": {"kept": "yes"}}, format="json").json()["thread_id"]


def _snapshot():
    return (list(Thread.objects.values_list("pk", "metadata")), Run.objects.count(), RunEvent.objects.count())


@pytest.mark.parametrize(("method", "path", "body"), ENTRY_POINTS, ids=[f"{m} {p} {b[:20]}" for m, p, b in ENTRY_POINTS])
def test_lone_surrogates_are_refused_with_422_and_nothing_written(user_client, tid, method, path, body):
    before = _snapshot()
    response = _call(user_client, method, path.format(tid=tid), body.replace("X", SURROGATE))
    assert response.status_code == 422, response.content
    assert "surrogate" in response.json()["detail"]
    assert _snapshot() == before


@pytest.mark.parametrize(("method", "path", "body"), ENTRY_POINTS, ids=[f"{m} {p} {b[:20]}" for m, p, b in ENTRY_POINTS])
def test_5000_deep_json_is_422(user_client, tid, method, path, body):
    before = _snapshot()
    response = _call(user_client, method, path.format(tid=tid), body.replace("X", DEEP) if "{X:" not in body else DEEP)
    assert response.status_code == 422, response.content
    assert "nested deeper than" in response.json()["detail"]
    assert _snapshot() == before


def test_a_websocket_run_with_a_lone_surrogate_is_refused(user, tid):
    from deerflow_site.asgi import application

    async def go():
        communicator = WebsocketCommunicator(application, f"/ws/threads/{tid}/", headers=[(b"origin", b"http://localhost")])
        communicator.scope["user"] = user
        connected, _ = await communicator.connect(timeout=HANG_SECONDS)
        assert connected
        await communicator.send_to(text_data='{"type": "run", "payload": {"input": {"messages": [{"role": "user", "content": "\\ud800"}]}}}')
        first = await communicator.receive_json_from(timeout=HANG_SECONDS)
        await communicator.send_to(text_data='{"type": "run", "payload": ' + DEEP + "}")
        second = await communicator.receive_json_from(timeout=HANG_SECONDS)
        await communicator.disconnect(timeout=HANG_SECONDS)
        return first, second

    first, second = async_to_sync(go)()
    assert first["type"] == "error" and first["status"] == 422 and "surrogate" in first["detail"]
    assert second["type"] == "error" and second["status"] == 422 and "nested deeper" in second["detail"]
    assert not Run.objects.exists()


def test_rows_stored_before_the_door_was_shut_do_not_break_lists(user, user_client, tid):
    # JSONField stores the escape, so such rows exist on servers that ran before this check.
    bad = Thread.objects.create(owner=user, metadata={"note": "bad \ud800 text"})
    run = Run.objects.create(thread=bad, owner=user, status="success", kwargs={"input": {"messages": [{"role": "user", "content": "\ud800"}]}},
                             metadata={"k": "\ud800"})
    RunEvent.objects.create(thread=bad, run=run, seq=1, event_type="human", category="message",
                            content={"type": "human", "content": "hello \ud800", "id": "m1"}, metadata={})

    search = user_client.post("/api/threads/search", {}, format="json")
    assert search.status_code == 200, search.content
    by_id = {t["thread_id"]: t for t in search.json()}
    assert by_id[bad.pk]["metadata"]["note"] == "bad \ufffd text"
    assert by_id[tid]["metadata"] == {"kept": "yes"}
    runs = user_client.get(f"/api/threads/{bad.pk}/runs")
    assert runs.status_code == 200, runs.content
    assert runs.json()[0]["metadata"] == {"k": "\ufffd"}
    page = user_client.get(f"/api/threads/{bad.pk}/messages/page")
    assert page.status_code == 200, page.content
    assert user_client.get(f"/api/threads/{bad.pk}").status_code == 200
    # And it can be deleted, after which the lists are as if it never was.
    assert user_client.delete(f"/api/threads/{bad.pk}").status_code in (200, 204)
    search = user_client.post("/api/threads/search", {}, format="json")
    assert search.status_code == 200 and [t["thread_id"] for t in search.json()] == [tid]


def test_a_run_without_input_on_a_fresh_thread_is_422(user_client, tid):
    response = user_client.post(f"/api/threads/{tid}/runs", {}, format="json")
    assert response.status_code == 422, response.content
    assert "input" in response.json()["detail"]
    assert not Run.objects.exists()


def test_a_3mb_artifact_put_is_413(user_client, tid):
    body = '{"content": "' + "x" * (3 * 1024 * 1024) + '", "expected_sha256": "' + "0" * 64 + '"}'
    response = _call(user_client, "put", f"/api/threads/{tid}/artifacts/outputs/notes.md", body)
    assert response.status_code == 413, response.content
    assert "bytes" in response.json()["detail"]
