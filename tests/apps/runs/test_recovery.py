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

    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=120)
    run_id = py(
        "import django; django.setup()\n"
        "from apps.accounts.models import User; from apps.threads.services import thread_create; from apps.runs.models import Run\n"
        "u = User.objects.create_user('crash'); t = thread_create(owner=u, thread_id='t1')\n"
        "print(Run.objects.create(thread=t, owner=u, status='running').pk)"
    )
    py("import deerflow_site.asgi")  # what Daphne does when it starts
    assert py(f"import django; django.setup()\nfrom apps.runs.models import Run; r = Run.objects.get(pk='{run_id}'); print(r.status, r.stop_reason)") == "error orphan_recovered"


def _wait_until(condition, what, timeout=10):
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
