"""Django admin as the operator console: the actions do what they say through the owning
services (cancel really stops a running run), run pages are read-only, and celery-beat's
tables, which the app owns, are out of sight."""

from __future__ import annotations

import time

import pytest
from rest_framework.test import APIClient

from apps.accounts.models import PersonalAccessToken
from apps.accounts.services import token_create
from apps.runs.models import Run
from apps.schedules.models import ScheduledTask
from apps.threads.models import Thread
from harness.testing import call, tool_reply
from tests.support.waiting import HANG_SECONDS



def act(client, model: str, action: str, ids) -> str:
    response = client.post(f"/admin/{model}/", {"action": action, "_selected_action": [str(i) for i in ids]}, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def wait_for(predicate, timeout=HANG_SECONDS):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_the_cancel_action_stops_a_running_run(staff_client, user, scripted_agent):  # noqa: F811
    model = scripted_agent(tool_reply(call("slow", seconds=30)))
    client = APIClient()
    client.force_authenticate(user)
    tid = client.post("/api/threads", {}, format="json").json()["thread_id"]
    run = client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "work"}]}}, format="json").json()
    wait_for(lambda: len(model.requests) >= 1 and Run.objects.get(pk=run["run_id"]).status == "running")
    page = act(staff_client, "runs/run", "cancel_runs", [run["run_id"]])
    assert f"Run {run['run_id']}: interrupted" in page
    done = Run.objects.get(pk=run["run_id"])
    assert (done.status, done.stop_reason) == ("interrupted", "cancelled")
    assert Thread.objects.get(pk=tid).status == "idle"
    # The thread takes a new run at once: nothing still holds it.
    scripted_agent("fresh answer")
    again = client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": "again"}]}}, format="json")
    assert again.status_code == 200
    assert "had already finished" in act(staff_client, "runs/run", "cancel_runs", [run["run_id"]])


@pytest.mark.django_db
def test_a_run_page_is_read_only_with_cost_and_duration_columns(staff_client, user, priced_config, seed_run):
    from django.utils import timezone

    run = seed_run(user, at=timezone.now(), by_model={"pro": {"input_tokens": 0, "output_tokens": 1_000_000}}, duration_s=3)
    listing = staff_client.get("/admin/runs/run/").content.decode()
    assert "$8.00" in listing and "3.0 s" in listing and "Cancel selected runs" in listing
    page = staff_client.get(f"/admin/runs/run/{run.pk}/change/").content.decode()
    assert 'name="_save"' not in page and 'name="_continue"' not in page
    assert staff_client.post(f"/admin/runs/run/{run.pk}/change/", {"status": "error"}).status_code == 403


@pytest.mark.django_db
def test_mark_idle_frees_a_stuck_thread_but_not_one_with_an_active_run(staff_client, user):
    stuck = Thread.objects.create(id="t-stuck", owner=user, status="busy")
    busy = Thread.objects.create(id="t-busy", owner=user, status="busy")
    Run.objects.create(thread=busy, owner=user, status="running")
    page = act(staff_client, "threads/thread", "mark_idle", ["t-stuck", "t-busy"])
    assert "has an active run" in page and "1 thread(s) marked idle" in page
    assert dict(Thread.objects.values_list("id", "status")) == {"t-stuck": "idle", "t-busy": "busy"}


@pytest.mark.django_db
def test_disabling_a_user_revokes_their_tokens_and_stops_them(staff_client, user):
    issued = token_create(owner=user, name="script", scopes=["threads:read"])
    client = APIClient()
    assert client.get("/api/threads/search", HTTP_AUTHORIZATION=f"Bearer {issued.token}").status_code in (200, 405)
    page = act(staff_client, "accounts/user", "disable_users", [user.pk, staff_client.admin.pk])
    assert "revoked 1 token(s)" in page and "cannot disable your own account" in page
    user.refresh_from_db()
    staff_client.admin.refresh_from_db()
    assert user.is_active is False and staff_client.admin.is_active is True
    assert PersonalAccessToken.objects.get(pk=issued.record.pk).revoked_at is not None
    assert client.post("/api/threads/search", {}, format="json", HTTP_AUTHORIZATION=f"Bearer {issued.token}").status_code == 401
    act(staff_client, "accounts/user", "enable_users", [user.pk])
    user.refresh_from_db()
    assert user.is_active is True


@pytest.mark.django_db
def test_revoke_tokens_action(staff_client, user):
    issued = token_create(owner=user, name="ci", scopes=["threads:read"])
    assert "Revoked 1 token(s)" in act(staff_client, "accounts/personalaccesstoken", "revoke", [issued.record.pk])
    assert APIClient().post("/api/threads/search", {}, format="json", HTTP_AUTHORIZATION=f"Bearer {issued.token}").status_code == 401


@pytest.mark.django_db
def test_pause_and_resume_a_schedule_keep_its_beat_entry_in_step(staff_client, user):
    from apps.schedules.services import scheduled_task_create

    task = scheduled_task_create(user=user, data={"title": "Digest", "prompt": "news", "cron": "0 9 * * *", "timezone": "UTC"})
    act(staff_client, "schedules/scheduledtask", "disable", [task.pk])
    task = ScheduledTask.objects.select_related("periodic_task").get(pk=task.pk)
    assert task.enabled is False and (task.periodic_task is None or task.periodic_task.enabled is False)
    act(staff_client, "schedules/scheduledtask", "enable", [task.pk])
    task = ScheduledTask.objects.select_related("periodic_task").get(pk=task.pk)
    assert task.enabled is True and task.periodic_task.enabled is True


@pytest.mark.django_db
def test_the_admin_is_branded_and_hides_celery_beats_tables(staff_client):
    index = staff_client.get("/admin/").content.decode()
    assert "DeerFlow administration" in index and "Operator console" in index
    assert "Periodic tasks" not in index and "Crontabs" not in index
    assert staff_client.get("/admin/django_celery_beat/periodictask/").status_code == 404
    assert 'href="/console/"' in index
