"""Runs left active by a crashed process are settled at startup and the thread is usable again."""

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from apps.runs.models import Run, RunEvent
from apps.runs.recovery import recover_on_startup
from apps.runs.runtime import get_runtime
from apps.runs.services import runs_recover_orphans
from apps.threads.services import thread_create
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import body_of
from tests.support.live import ShellSession, migrated_database
from tests.support.waiting import HANG_SECONDS

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]


def test_expired_lease_marks_the_run_error_and_frees_the_thread(user, user_client, scripted_agent):
    scripted_agent("fresh start")
    # The runs loop sweeps for orphans as it starts: started (and swept) first, that sweep
    # cannot take this orphan from the call under test, as it did when this test ran alone.
    recover_on_startup(get_runtime())
    thread = thread_create(owner=user, thread_id="crashed")
    orphan = Run.objects.create(thread=thread, owner=user, status=Run.Status.RUNNING,
                                lease_owner="gone:1", lease_expires_at=timezone.now() - timedelta(seconds=5))
    alive = Run.objects.create(thread=thread_create(owner=user), owner=user, status=Run.Status.RUNNING,
                               lease_owner="other:2", lease_expires_at=timezone.now() + timedelta(seconds=30))
    assert runs_recover_orphans() == 1
    orphan.refresh_from_db()
    assert orphan.status == "error" and orphan.stop_reason == "orphan_recovered" and orphan.finished_at
    assert Run.objects.get(pk=alive.pk).status == "running"  # a live lease is somebody's run

    response = user_client.post("/api/threads/crashed/runs", {"input": {"messages": [{"role": "user", "content": "again"}]}}, format="json")
    assert response.status_code == 200


def test_the_server_recovers_orphans_when_it_starts(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_SETTINGS", "DATABASE_URL"))}
    env.update({"DJANGO_DEBUG": "true", "DEER_FLOW_HOME": str(tmp_path), "DJANGO_SETTINGS_MODULE": "deerflow_site.settings"})

    def py(code):
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    # A copy of the suite's migrated template, and the orphan made and read back by shell
    # processes that skip Django's start-up: only the server's start is the one under test.
    env["DATABASE_URL"] = migrated_database(tmp_path, env)
    shell = ShellSession(env)
    try:
        run_id = shell.run(
            "from apps.accounts.models import User; from apps.threads.services import thread_create; from apps.runs.models import Run\n"
            "u = User.objects.create_user('crash'); t = thread_create(owner=u, thread_id='t1')\n"
            "print(Run.objects.create(thread=t, owner=u, status='running').pk)"
        )
        py("import deerflow_site.asgi")  # what Daphne does when it starts
        assert shell.run(f"from apps.runs.models import Run; r = Run.objects.get(pk='{run_id}'); print(r.status, r.stop_reason)") == "error orphan_recovered"
    finally:
        shell.close()


def _wait_until(condition, what, timeout=HANG_SECONDS):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_events_are_journaled_while_the_run_waits_for_no_further_event(user, user_client, scripted_agent):
    # A tool that runs for a long time: nothing else happens in the run to push the buffer
    # out, yet what came before must reach the database about a second later.
    scripted_agent(tool_reply(call("slow", seconds=60)), "done")
    thread = thread_create(owner=user)
    run_id = user_client.post(f"/api/threads/{thread.pk}/runs", {"input": {"messages": [{"role": "user", "content": "take your time"}]}},
                              format="json").json()["run_id"]

    def journaled():
        return set(RunEvent.objects.filter(run_id=run_id).values_list("event_type", flat=True))

    _wait_until(lambda: {"run.start", "llm.human.input", "llm.ai.response"} <= journaled(), "the journal to be written")
    assert Run.objects.get(pk=run_id).status == "running"  # written by the timer, not by the finish
    assert user_client.post(f"/api/threads/{thread.pk}/runs/{run_id}/cancel?wait=true").status_code == 204


def test_a_thread_held_by_a_lapsed_run_admits_at_once_and_the_checkpoint_fills_the_journal(user, user_client, scripted_agent):
    # What a crash leaves: a checkpoint with the prompt, a journal without it, a run row whose
    # lease lapsed. The next request on that thread must not be refused, nor the prompt lost.
    scripted_agent("first answer", "second answer")
    thread = thread_create(owner=user)
    body = {"input": {"messages": [{"role": "user", "content": "my first words"}]}}
    body_of(user_client.post(f"/api/threads/{thread.pk}/runs/wait", body, format="json"))
    RunEvent.objects.filter(thread=thread).delete()
    orphan = Run.objects.create(thread=thread, owner=user, status=Run.Status.RUNNING, lease_owner="gone:1",
                                lease_expires_at=timezone.now() - timedelta(seconds=1))

    again = {"input": {"messages": [{"role": "user", "content": "my second words"}]}, "multitask_strategy": "reject"}
    response = user_client.post(f"/api/threads/{thread.pk}/runs/wait", again, format="json")
    assert response.status_code == 200
    body_of(response)
    orphan.refresh_from_db()
    assert orphan.status == "error" and orphan.stop_reason == "orphan_recovered"
    page = user_client.get(f"/api/threads/{thread.pk}/messages/page").json()["data"]
    assert [(e["event_type"], e["content"]["content"]) for e in page] == [
        ("llm.human.input", "my first words"), ("llm.ai.response", "first answer"),
        ("llm.human.input", "my second words"), ("llm.ai.response", "second answer"),
    ]
    assert {e["run_id"] for e in page[:2]} == {str(orphan.pk)}


def _join_stream(client, thread_id: str, run_id: str, last_event_id: str | None = None) -> list[dict]:
    from tests.apps.runs.test_runs_api import parse_sse

    headers = {"HTTP_LAST_EVENT_ID": last_event_id} if last_event_id else {}
    response = client.get(f"/api/threads/{thread_id}/runs/{run_id}/stream", HTTP_ACCEPT="text/event-stream", **headers)
    assert response.status_code == 200, getattr(response, "content", b"")
    return parse_sse(body_of(response))


def test_a_recovered_run_has_its_finish_time_and_its_stream_says_why_it_failed(user, user_client):
    from apps.runs.recovery import ORPHAN_ERROR

    recover_on_startup(get_runtime())
    thread = thread_create(owner=user)
    orphan = Run.objects.create(thread=thread, owner=user, status=Run.Status.RUNNING, lease_owner="gone:1",
                                lease_expires_at=timezone.now() - timedelta(seconds=5))
    _wait_until(lambda: runs_recover_orphans() or Run.objects.get(pk=orphan.pk).status == "error", "the orphan to be settled")

    info = user_client.get(f"/api/threads/{thread.pk}/runs/{orphan.pk}").json()
    assert info["status"] == "error" and info["stop_reason"] == "orphan_recovered"
    assert info["finished_at"] and info["finished_at"] >= info["created_at"]
    events = _join_stream(user_client, thread.pk, str(orphan.pk))
    assert [e["event"] for e in events] == ["error", "end"]
    assert events[0]["data"] == {"error": "orphan_recovered", "message": ORPHAN_ERROR, "name": "orphan_recovered"}
    # Once the bridge has forgotten the run, its journal says the same.
    from apps.runs.selectors import run_failure

    assert run_failure(run_id=str(orphan.pk)) == events[0]["data"]


def test_a_failed_run_whose_events_the_bridge_does_not_hold_still_streams_its_error_before_end(user, user_client):
    # What a client rejoining after the bridge's retention (or through a process that never
    # held the run) finds: the row and the journal, nothing in the bridge.
    from apps.runs.journal import JournalEvent, journal_insert

    thread = thread_create(owner=user)
    run = Run.objects.create(thread=thread, owner=user, status=Run.Status.ERROR, error="ValueError: the tool broke",
                             stop_reason="error", finished_at=timezone.now())
    journal_insert(thread_id=thread.pk, run_id=str(run.pk),
                   events=[JournalEvent("run.error", "error", "the tool broke", {"error_type": "ValueError"})])
    assert not get_runtime().bridge.has_run(str(run.pk))

    error = {"error": "ValueError", "message": "the tool broke", "name": "ValueError"}
    events = _join_stream(user_client, thread.pk, str(run.pk))
    assert [(e["event"], e["data"]) for e in events] == [("error", error), ("end", None)]
    # A client resuming with the last id it saw (from long ago) is told too.
    events = _join_stream(user_client, thread.pk, str(run.pk), last_event_id="1700000000000-3")
    assert [(e["event"], e["data"]) for e in events] == [("error", error), ("end", None)]

    # A run that succeeded gets its lone end, as before.
    ok = Run.objects.create(thread=thread, owner=user, status=Run.Status.SUCCESS, finished_at=timezone.now())
    assert [e["event"] for e in _join_stream(user_client, thread.pk, str(ok.pk))] == ["end"]


def test_the_websocket_of_a_failed_run_the_bridge_does_not_hold_sends_its_error_before_end(user):
    from asgiref.sync import async_to_sync

    from apps.runs.journal import JournalEvent, journal_insert
    from tests.apps.runs.test_websocket import connect, events_until_end

    thread = thread_create(owner=user)
    run = Run.objects.create(thread=thread, owner=user, status=Run.Status.ERROR, error="ValueError: the tool broke",
                             stop_reason="error", finished_at=timezone.now())
    journal_insert(thread_id=thread.pk, run_id=str(run.pk),
                   events=[JournalEvent("run.error", "error", "the tool broke", {"error_type": "ValueError"})])

    async def follow():
        ws, connected, _ = await connect(user, thread.pk)
        assert connected
        await ws.send_json_to({"type": "subscribe", "run_id": str(run.pk)})
        events = await events_until_end(ws)
        await ws.disconnect()
        return events

    events = async_to_sync(follow)()
    assert [(e["event"], e["data"]) for e in events] == [
        ("error", {"error": "ValueError", "message": "the tool broke", "name": "ValueError"}), ("end", None)]
