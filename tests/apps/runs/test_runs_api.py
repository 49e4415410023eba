"""The run routes in-process: admission, streaming, wait, join, cancel, busy threads."""

import json
import time

import pytest

from apps.runs.models import Run, RunEvent
from harness.testing import call, tool_reply
from tests.support.agents import wait_for_slow_tool
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]


def parse_sse(body: bytes) -> list[dict]:
    events = []
    for block in body.decode().split("\n\n"):
        if not block.strip() or block.startswith(":"):
            continue
        item = {}
        for line in block.split("\n"):
            key, _, value = line.partition(": ")
            item[key] = value
        item["data"] = json.loads(item["data"])
        events.append(item)
    return events


def body_of(response) -> bytes:
    """The whole body of a (possibly async) streaming response, from sync test code."""
    from asgiref.sync import async_to_sync

    if not getattr(response, "is_async", False):
        return b"".join(response.streaming_content)

    async def collect():
        return b"".join([chunk async for chunk in response.streaming_content])

    return async_to_sync(collect)()


def stream(client, path, body):
    response = client.post(path, body, format="json", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200, getattr(response, "content", b"")
    return response, parse_sse(body_of(response))


def wait_for_status(run_id, statuses, timeout=HANG_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.status in statuses:
            return run
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} stayed {Run.objects.get(pk=run_id).status}")


def wait_for_model_calls(model, count, timeout=HANG_SECONDS):
    """Until the scripted model has answered ``count`` requests: a run is really under way.
    A test that needs the run inside its slow tool waits with ``wait_for_slow_tool``."""
    deadline = time.monotonic() + timeout
    while len(model.requests) < count:
        assert time.monotonic() < deadline, f"the model got {len(model.requests)} requests, expected {count}"
        time.sleep(0.02)


def new_thread(client, thread_id=None):
    body = {"thread_id": thread_id} if thread_id else {}
    response = client.post("/api/threads", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()["thread_id"]


def test_stream_emits_metadata_values_messages_and_end(user_client, scripted_agent):
    scripted_agent("Hello there, human!")
    tid = new_thread(user_client)
    response, events = stream(user_client, f"/api/threads/{tid}/runs/stream",
                              {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hi"}]},
                               "stream_mode": ["values", "messages-tuple"]})
    names = [e["event"] for e in events]
    assert names[0] == "metadata" and names[-1] == "end"
    run_id = events[0]["data"]["run_id"]
    assert response["Content-Location"] == f"/api/threads/{tid}/runs/{run_id}"
    assert "values" in names and "messages" in names
    deltas = "".join(e["data"][0]["content"] for e in events if e["event"] == "messages" and e["data"][0]["type"] == "AIMessageChunk")
    assert deltas == "Hello there, human!"
    final = [e for e in events if e["event"] == "values"][-1]["data"]
    assert [m["type"] for m in final["messages"]] == ["human", "ai"]
    ids = [e["id"] for e in events if "id" in e]
    assert len(ids) == len(set(ids)) == len(events)

    run = Run.objects.get(pk=run_id)
    assert run.status == "success" and run.thread.status == "idle"
    assert run.input_tokens > 0 and run.output_tokens > 0
    types = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("event_type", flat=True))
    # run.delivery: the receipt every run gets (apps/workspace), here with nothing presented.
    assert types == ["run.start", "llm.human.input", "llm.ai.response", "run.end", "run.delivery"]


def test_wait_returns_final_values_and_join_after_create(user_client, scripted_agent):
    scripted_agent("first answer", "second answer")
    tid = new_thread(user_client)
    response = user_client.post(f"/api/threads/{tid}/runs/wait", {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "q1"}]}}, format="json")
    values = json.loads(body_of(response))
    assert values["messages"][-1]["content"] == "first answer"

    created = user_client.post(f"/api/threads/{tid}/runs", {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "q2"}]}}, format="json")
    assert created.status_code == 200
    run_id = created.json()["run_id"]
    joined = user_client.get(f"/api/threads/{tid}/runs/{run_id}/join")
    values = json.loads(body_of(joined))
    assert [m["content"] for m in values["messages"]] == ["q1", "first answer", "q2", "second answer"]
    listed = user_client.get(f"/api/threads/{tid}/runs").json()
    assert [r["run_id"] for r in listed][0] == run_id and len(listed) == 2

    state = user_client.get(f"/api/threads/{tid}/state").json()
    assert state["values"]["messages"][-1]["content"] == "second answer" and state["next"] == []
    # checkpoints.durability defaults to exit: one checkpoint per run, the newest first.
    history = user_client.post(f"/api/threads/{tid}/history", {"limit": 3}, format="json").json()
    assert len(history) == 2 and history[0]["checkpoint_id"] == state["checkpoint_id"]
    assert [m["content"] for m in history[1]["values"]["messages"]] == ["q1", "first answer"]

    page = user_client.get(f"/api/threads/{tid}/messages/page?limit=3").json()
    assert page["has_more"] is True and [r["content"]["content"] for r in page["data"]] == ["first answer", "q2", "second answer"]
    older = user_client.get(f"/api/threads/{tid}/messages/page?limit=3&before_seq={page['next_before_seq']}").json()
    assert older["has_more"] is False and [r["content"]["content"] for r in older["data"]] == ["q1"]

    usage = user_client.get(f"/api/threads/{tid}/token-usage").json()
    assert usage["total_runs"] == 2 and usage["total_tokens"] > 0 and "scripted-model" in usage["by_model"]


def test_busy_thread_rejects_and_interrupt_replaces(user_client, scripted_agent):
    scripted_agent(tool_reply(call("slow", seconds=30)), "replaced answer")
    tid = new_thread(user_client)
    first = user_client.post(f"/api/threads/{tid}/runs", {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "slow"}]}}, format="json").json()
    wait_for_slow_tool()
    busy = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "again"}]}}, format="json")
    assert busy.status_code == 409 and busy.json() == {"detail": f"Thread {tid} already has an active run"}

    second = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "now"}]}, "multitask_strategy": "interrupt"}, format="json")
    assert second.status_code == 200
    assert Run.objects.get(pk=first["run_id"]).status == "interrupted"
    done = wait_for_status(second.json()["run_id"], {"success", "error"})
    assert done.status == "success", done.error


def test_cancel_with_rollback_restores_the_previous_state(user_client, scripted_agent):
    scripted_agent("kept answer", tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    user_client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": "keep me"}]}}, format="json")
    wait_for_status(Run.objects.get(thread_id=tid).pk, {"success"})
    before = user_client.get(f"/api/threads/{tid}/state").json()["values"]["messages"]

    run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "drop me"}]}}, format="json").json()
    wait_for_slow_tool()
    response = user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel?action=rollback&wait=1")
    assert response.status_code == 204
    assert Run.objects.get(pk=run["run_id"]).status == "interrupted"
    after = user_client.get(f"/api/threads/{tid}/state").json()["values"]["messages"]
    assert [m["content"] for m in after] == [m["content"] for m in before] == ["keep me", "kept answer"]
    again = user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel")
    assert again.status_code == 409 and "is not cancellable (status: interrupted)" in again.json()["detail"]


def test_cancel_with_interrupt_keeps_what_was_done(user_client, scripted_agent):
    scripted_agent(tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "work"}]}}, format="json").json()
    wait_for_slow_tool()
    assert user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel?wait=true").status_code == 204
    messages = user_client.get(f"/api/threads/{tid}/state").json()["values"]["messages"]
    assert messages[0]["content"] == "work" and messages[1]["tool_calls"][0]["name"] == "slow"
    assert Run.objects.get(pk=run["run_id"]).stop_reason == "cancelled"


def test_interrupt_and_resume_with_command(user_client, scripted_agent):
    scripted_agent(tool_reply(call("ask_user", question="Which city?")), "Paris it is.")
    tid = new_thread(user_client)
    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream", {"input": {"messages": [{"role": "user", "content": "plan a trip"}]}, "stream_mode": "updates"})
    interrupts = [e for e in events if e["event"] == "updates" and "__interrupt__" in e["data"]]
    assert interrupts and interrupts[0]["data"]["__interrupt__"][0]["value"] == {"question": "Which city?"}
    thread = user_client.get(f"/api/threads/{tid}").json()
    assert thread["status"] == "interrupted"

    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream", {"command": {"resume": "Paris"}, "stream_mode": "values"})
    final = [e for e in events if e["event"] == "values"][-1]["data"]["messages"]
    assert final[-2]["content"] == "user said: Paris" and final[-1]["content"] == "Paris it is."
    assert user_client.get(f"/api/threads/{tid}").json()["status"] == "idle"


def test_custom_events_and_subgraph_default(user_client, scripted_agent):
    scripted_agent(tool_reply(call("progress", note="halfway")), "done")
    tid = new_thread(user_client)
    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream", {"input": {"messages": [{"role": "user", "content": "go"}]}, "stream_mode": ["custom"]})
    assert [e["data"] for e in events if e["event"] == "custom"] == [{"type": "progress", "note": "halfway"}]


def test_model_error_ends_with_an_error_event_and_frees_the_thread(user_client, scripted_agent):
    from harness.testing import Reply

    scripted_agent(Reply(status=500, error_message="provider exploded"), "recovered")
    tid = new_thread(user_client)
    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream", {"input": {"messages": [{"role": "user", "content": "x"}]}})
    error = [e for e in events if e["event"] == "error"]
    assert error and "provider exploded" in error[0]["data"]["message"] and error[0]["data"]["error"]
    assert events[-1]["event"] == "end"
    run = Run.objects.get(thread_id=tid)
    assert run.status == "error" and "provider exploded" in run.error
    assert user_client.get(f"/api/threads/{tid}").json()["status"] == "error"
    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream", {"input": {"messages": [{"role": "user", "content": "y"}]}})
    assert [e["event"] for e in events][-1] == "end" and not [e for e in events if e["event"] == "error"]


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"stream_mode": "events"}, 422, "stream_mode: Value error, unsupported stream mode 'events'"),
        ({"webhook": "http://example.com"}, 422, "webhook"),
        ({"after_seconds": 5}, 422, "after_seconds"),
        ({"bogus": 1}, 422, "bogus: unknown or unsupported run option"),
        ({"assistant_id": "nope"}, 404, "Assistant nope not found"),
        ({"context": {"model_name": "ghost"}}, 422, "context.model_name: unknown model 'ghost'; configured: test-model"),
        ({"command": {"resume": "x"}}, 422, "is not waiting for input"),
        ({"checkpoint_id": "1f000000-0000-6000-8000-000000000000"}, 404, "Checkpoint 1f000000-0000-6000-8000-000000000000 not found"),
        ({"input": {"messages": "hi"}}, 422, "input.messages must be a list"),
        ({"config": {"recursion_limit": 5000}}, 422, "recursion_limit"),
        ({"langsmith_tracer": {"project_name": "p"}}, 422, "langsmith_tracer: per-run tracing options are not supported"),
        ({"checkpoint_during": False, "durability": "async"}, 422, "checkpoint_during=false contradicts durability=async"),
        ({"command": {"resume": "x"}, "strict_resume": False}, 422, "strict_resume: false is not supported"),
    ],
)
def test_bad_run_requests_are_refused_with_a_detail(user_client, scripted_agent, body, status, detail):
    tid = new_thread(user_client)
    response = user_client.post(f"/api/threads/{tid}/runs", body, format="json")
    assert response.status_code == status, response.content
    assert detail.replace("Value error, ", "") in response.json()["detail"]
    assert not Run.objects.exists()


def test_sdk_defaults_are_accepted(user_client, scripted_agent):
    scripted_agent("ok")
    tid = new_thread(user_client)
    body = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "x"}]}, "stream_mode": "values",
            "stream_subgraphs": False, "stream_resumable": False, "on_disconnect": "continue", "if_not_exists": "create",
            "durability": "async", "multitask_strategy": "reject"}
    response, events = stream(user_client, f"/api/threads/{tid}/runs/stream", body)
    assert events[-1]["event"] == "end"


@pytest.mark.parametrize("options", [
    {"stream_resumable": True},
    {"stream_resumable": False, "strict_resume": True},
    {"checkpoint_during": False},
    {"checkpoint_during": True, "durability": "async"},
    {"strict_resume": False},
])
def test_options_we_honour_anyway_are_accepted(user_client, scripted_agent, options):
    scripted_agent("ok")
    tid = new_thread(user_client)
    body = {"input": {"messages": [{"role": "user", "content": "x"}]}, **options}
    response, events = stream(user_client, f"/api/threads/{tid}/runs/stream", body)
    assert response.status_code == 200
    assert events[-1]["event"] == "end"
    run = Run.objects.get(thread_id=tid)
    assert run.status == Run.Status.SUCCESS
    if "checkpoint_during" in options:
        assert run.kwargs["durability"] == ("async" if options["checkpoint_during"] else "sync")


def test_run_on_missing_thread_is_404_unless_if_not_exists_create(user_client, scripted_agent):
    scripted_agent("made")
    response = user_client.post("/api/threads/nope-thread/runs", {"input": {"messages": [{"role": "user", "content": "x"}]}}, format="json")
    assert response.status_code == 404 and response.json()["detail"] == "Thread nope-thread not found"
    response = user_client.post("/api/threads/new-thread/runs", {"input": {"messages": [{"role": "user", "content": "x"}]}, "if_not_exists": "create"}, format="json")
    assert response.status_code == 200


def test_stateless_stream_creates_a_thread(user_client, scripted_agent):
    scripted_agent("stateless hello")
    _, events = stream(user_client, "/api/runs/stream", {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "x"}]}})
    thread_id = events[0]["data"]["thread_id"]
    assert user_client.get(f"/api/threads/{thread_id}").json()["values"]["messages"][-1]["content"] == "stateless hello"


def test_other_users_threads_and_runs_are_404(user_client, other_user, scripted_agent):
    from rest_framework.test import APIClient

    scripted_agent("mine")
    tid = new_thread(user_client, "private-thread")
    run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "x"}]}}, format="json").json()
    wait_for_status(run["run_id"], {"success"})
    bob = APIClient()
    bob.force_authenticate(other_user)
    for method, path in [("get", f"/api/threads/{tid}"), ("get", f"/api/threads/{tid}/state"), ("get", f"/api/threads/{tid}/runs"),
                         ("get", f"/api/threads/{tid}/runs/{run['run_id']}"), ("post", f"/api/threads/{tid}/runs"),
                         ("post", f"/api/threads/{tid}/runs/{run['run_id']}/cancel"), ("delete", f"/api/threads/{tid}"),
                         ("get", f"/api/threads/{tid}/messages/page"), ("post", f"/api/threads/{tid}/history")]:
        response = getattr(bob, method)(path, {}, format="json")
        assert response.status_code == 404, (method, path, response.status_code)
        assert response.json()["detail"] == f"Thread {tid} not found"
    assert bob.post("/api/threads/search", {}, format="json").json() == []
    creating = bob.post("/api/threads", {"thread_id": tid}, format="json")
    assert creating.status_code == 404


def test_the_agents_stop_reason_and_model_name_reach_the_run(user_client, scripted_agent, settings):
    from harness.testing import Reply

    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    scripted_agent(Reply(text="This answer was cut off because the", finish_reason="length"))
    tid = new_thread(user_client)
    response = user_client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": "long essay"}]},
                                                                  "context": {"model_name": "test-model"}}, format="json")
    body_of(response)
    run = Run.objects.get(thread_id=tid)
    assert run.status == "success" and run.stop_reason == "model_length_capped"
    assert list(run.token_usage["by_model"]) == ["test-model"]


def test_a_run_cancelled_at_once_does_not_stay_active(user_client, scripted_agent):
    """Cancels that land before the worker starts or while it claims the run still finish it."""
    scripted_agent("never needed", loop=True)
    for _ in range(5):
        tid = new_thread(user_client)
        run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "x"}]}}, format="json").json()
        response = user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel")
        assert response.status_code in (202, 409)  # 409 only if the run already finished
        done = wait_for_status(run["run_id"], {"interrupted", "success"})
        assert done.thread.status == "idle"
        again = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "y"}]}}, format="json")
        assert again.status_code == 200


def test_a_run_whose_cancel_reached_the_database_before_its_claim_is_settled_by_its_worker(user):
    """The canceller in this process leaves the row to the worker; if the cancel of the claim
    itself was lost (asgiref can swallow it), the claim finds the flag and must still settle."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.runs.runtime import process_id, get_runtime
    from apps.runs.worker import execute_run
    from apps.threads.models import Thread

    now = timezone.now()
    thread = Thread.objects.create(owner=user, status=Thread.Status.BUSY)
    run = Run.objects.create(thread=thread, owner=user, status=Run.Status.PENDING, cancel_requested_at=now, cancel_action="interrupt",
                             lease_owner=process_id(), lease_expires_at=now + timedelta(seconds=30))
    get_runtime().run_to_completion(str(run.pk), execute_run)
    run.refresh_from_db()
    thread.refresh_from_db()
    assert (run.status, run.stop_reason, thread.status) == ("interrupted", "cancelled", "idle")


def _run_owned_elsewhere(user, *, lease_seconds):
    """A running run as another live (or dead) process would hold it."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.threads.models import Thread

    thread = Thread.objects.create(owner=user, status=Thread.Status.BUSY)
    return Run.objects.create(thread=thread, owner=user, status=Run.Status.RUNNING, lease_owner="elsewhere:1",
                              lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds))


def test_cancel_of_a_run_another_live_process_executes_leaves_it_to_that_process(user, user_client):
    run = _run_owned_elsewhere(user, lease_seconds=30)
    response = user_client.post(f"/api/threads/{run.thread_id}/runs/{run.pk}/cancel?action=rollback")
    assert response.status_code == 202
    run.refresh_from_db()
    # Not settled here (its process is still running it); flagged for that process to act on.
    assert run.status == "running" and run.cancel_requested_at is not None and run.cancel_action == "rollback"
    assert run.thread.status == "busy"


def test_cancel_of_a_run_whose_process_died_settles_it(user, user_client):
    run = _run_owned_elsewhere(user, lease_seconds=-5)
    assert user_client.post(f"/api/threads/{run.thread_id}/runs/{run.pk}/cancel").status_code == 202
    run.refresh_from_db()
    assert run.status == "interrupted" and run.thread.status == "idle"


def test_a_worker_acts_on_a_cancel_flag_it_was_not_signalled(user_client, scripted_agent, monkeypatch):
    """The fallback when the cancel signal cannot reach the worker: the lease renewal sees the flag."""
    from django.utils import timezone

    from apps.runs import worker

    monkeypatch.setattr(worker, "CANCEL_POLL_SECONDS", 0.05)
    scripted_agent(tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "work"}]}}, format="json").json()
    wait_for_slow_tool()
    Run.objects.filter(pk=run["run_id"]).update(cancel_requested_at=timezone.now(), cancel_action="interrupt")
    done = wait_for_status(run["run_id"], {"interrupted", "success", "error"})
    assert done.status == "interrupted" and done.stop_reason == "cancelled"
    assert done.thread.status == "idle"


def test_one_lease_keeper_renews_and_polls_every_run_of_the_process(user_client, scripted_agent, monkeypatch, settings):
    """However many runs a process executes, its lease keeper asks the database about all of
    them at once: their leases move forward, and a flag on any of them cancels that one."""
    from django.utils import timezone

    from apps.runs import worker

    monkeypatch.setattr(worker, "CANCEL_POLL_SECONDS", 0.05)
    settings.RUN_LEASE_SECONDS = 3  # renewed every second
    ticks = []
    original = worker._leases_tick

    async def recording(run_ids, *, renew):
        ticks.append(set(run_ids))
        return await original(run_ids, renew=renew)

    monkeypatch.setattr(worker, "_leases_tick", recording)
    scripted_agent(tool_reply(call("slow", seconds=30)), loop=True)
    runs = []
    for _ in range(2):
        tid = new_thread(user_client)
        runs.append(user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "x"}]}},
                                     format="json").json()["run_id"])
    wait_for_slow_tool(2)
    first_expiry = {r.pk: r.lease_expires_at for r in Run.objects.filter(pk__in=runs)}
    deadline = time.monotonic() + HANG_SECONDS
    while time.monotonic() < deadline and not any(tick >= set(runs) for tick in ticks[-3:]):
        time.sleep(0.05)
    assert any(tick >= set(runs) for tick in ticks)  # one query covered both runs

    def renewed():
        return all(run.lease_expires_at > first_expiry[run.pk] for run in Run.objects.filter(pk__in=runs))

    deadline = time.monotonic() + HANG_SECONDS
    while time.monotonic() < deadline and not renewed():
        time.sleep(0.05)
    assert renewed()
    Run.objects.filter(pk=runs[0]).update(cancel_requested_at=timezone.now(), cancel_action="interrupt")
    assert wait_for_status(runs[0], {"interrupted", "success", "error"}).status == "interrupted"
    assert Run.objects.get(pk=runs[1]).status == "running"  # only the flagged one
    assert user_client.post(f"/api/threads/{Run.objects.get(pk=runs[1]).thread_id}/runs/{runs[1]}/cancel").status_code == 202
    assert wait_for_status(runs[1], {"interrupted", "success", "error"}).status == "interrupted"


def _stream_then_leave_mid_write(user, tid, body: dict) -> str:
    """POST a run stream through the real ASGI handler and disconnect while Django is
    writing a chunk (the body's generator is suspended at a ``yield`` then, not awaiting the
    bridge): the case where only the response's close() can notice the client left."""
    import asyncio

    from asgiref.sync import async_to_sync

    from apps.accounts.services import token_create
    from deerflow_site.server.handlers import SyncChainASGIHandler

    token = token_create(owner=user, name="asgi", scopes=["runs:create"]).token
    payload = json.dumps(body).encode()
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": f"/api/threads/{tid}/runs/stream", "raw_path": b"", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode()),
                         (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                         (b"accept", b"text/event-stream")],
             "client": ("127.0.0.1", 5000), "server": ("testserver", 80)}

    async def go() -> str:
        inbox: asyncio.Queue = asyncio.Queue()
        await inbox.put({"type": "http.request", "body": payload, "more_body": False})
        chunks: list[bytes] = []

        async def send(message):
            if message["type"] == "http.response.body" and message.get("body"):
                chunks.append(message["body"])
                if len(chunks) == 2:
                    await inbox.put({"type": "http.disconnect"})
                    await asyncio.Event().wait()  # the write never completes; Django cancels it

        await SyncChainASGIHandler()(scope, inbox.get, send)
        return b"".join(chunks).decode()

    return async_to_sync(go)()


def test_a_client_leaving_mid_write_cancels_the_run(user, user_client, scripted_agent):
    model = scripted_agent(tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    received = _stream_then_leave_mid_write(user, tid, {"input": {"messages": [{"role": "user", "content": "x"}]}})
    assert received.startswith("event: metadata")
    run = Run.objects.get(thread_id=tid)
    assert wait_for_status(run.pk, {"interrupted", "success", "error"}).status == "interrupted"
    assert len(model.requests) <= 1  # stopped, not finished


def test_a_client_leaving_with_on_disconnect_continue_leaves_the_run_alone(user, user_client, scripted_agent):
    scripted_agent(tool_reply(call("slow", seconds=0.5)), "done")
    tid = new_thread(user_client)
    _stream_then_leave_mid_write(user, tid, {"input": {"messages": [{"role": "user", "content": "x"}]}, "on_disconnect": "continue"})
    assert wait_for_status(Run.objects.get(thread_id=tid).pk, {"interrupted", "success", "error"}).status == "success"


def test_a_cancel_that_got_swallowed_is_delivered_again(user_client, scripted_agent, monkeypatch):
    """asgiref can swallow a cancel that lands while the run awaits a database call: the
    runtime then knows of the cancel but the task runs on. The flag poll cancels it again."""
    from django.utils import timezone

    from apps.runs import worker
    from apps.runs.runtime import get_runtime

    monkeypatch.setattr(worker, "CANCEL_POLL_SECONDS", 0.05)
    scripted_agent(tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "x"}]}}, format="json").json()
    wait_for_slow_tool()
    runtime = get_runtime()

    async def swallowed():  # what is left of a cancel whose CancelledError was eaten
        runtime.active[run["run_id"]].cancel_action = "interrupt"

    runtime.call(swallowed)
    Run.objects.filter(pk=run["run_id"]).update(cancel_requested_at=timezone.now(), cancel_action="interrupt")
    done = wait_for_status(run["run_id"], {"interrupted", "success", "error"})
    assert done.status == "interrupted" and done.thread.status == "idle"


def test_a_run_whose_events_cannot_be_published_still_settles(user_client, scripted_agent, monkeypatch):
    """The bridge (Redis in the distributed stack) going down mid-run must not leave the
    run active: it ends as an error saying why, and the thread takes new runs."""
    from apps.runs.runtime import get_runtime

    async def bridge_down(run_id, event, data):
        raise ConnectionError("Redis is down")

    scripted_agent("never delivered", "second")
    tid = new_thread(user_client)
    with monkeypatch.context() as patch:
        patch.setattr(get_runtime().bridge, "apublish", bridge_down)
        run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "x"}]}}, format="json").json()
        done = wait_for_status(run["run_id"], {"interrupted", "success", "error"})
    assert done.status == "error" and "Redis is down" in done.error
    again = user_client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": "y"}]}}, format="json")
    assert again.status_code == 200

