"""One-off scheduled tasks: created for a time still to come, fired once by beat's clocked
entry, complete after their run; a new time re-arms them."""

import datetime as dt
import time

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.schedules.models import ScheduledTask, ScheduledTaskRun
from apps.schedules.beat import entry_name
from apps.schedules.dispatch import dispatch
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.django_db(transaction=True)]


def create(client, **data):
    body = {"title": "Launch-day summary", "prompt": "Summarize the launch coverage", "schedule_type": "once",
            "schedule_spec": {"run_at": (timezone.now() + dt.timedelta(hours=2)).isoformat()}, "timezone": "Europe/Berlin", **data}
    return client.post("/api/scheduled-tasks", body, format="json")


def settled(task, timeout=HANG_SECONDS) -> ScheduledTaskRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = list(ScheduledTaskRun.objects.filter(task_id=task["id"] if isinstance(task, dict) else task.pk))
        if rows and not any(r.is_active for r in rows):
            return rows[0]
        time.sleep(0.02)
    raise AssertionError("the task run did not settle")


def test_a_one_off_task_is_created_for_its_time_with_a_clocked_beat_entry(user_client):
    response = create(user_client, schedule_spec={"run_at": "2999-12-24T09:00"})
    assert response.status_code == 201, response.content
    task = response.json()
    # A time without an offset is read in the task's zone: 09:00 in Berlin is 08:00 UTC in winter.
    assert task["schedule_type"] == "once" and task["cron"] is None
    assert task["schedule_spec"] == {"run_at": "2999-12-24T08:00:00+00:00"} and task["next_run_at"] == "2999-12-24T08:00:00+00:00"
    assert task["status"] == "enabled" and task["schedule_description"] == "Once, on Tue 24 Dec 2999 at 09:00"
    entry = PeriodicTask.objects.get(name=entry_name(task["id"]))
    assert entry.one_off and entry.crontab is None and entry.enabled
    assert entry.clocked.clocked_time == dt.datetime(2999, 12, 24, 8, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize("spec, detail", [
    ({"run_at": "2001-01-01T00:00:00Z"}, "schedule_spec.run_at: 2001-01-01T00:00:00+00:00 is in the past"),
    ({"run_at": "tomorrow at nine"}, "schedule_spec.run_at: 'tomorrow at nine' is not an ISO 8601 date and time"),
    ({"cron": "0 7 * * *"}, "schedule_spec.run_at: a date and time is required"),
])
def test_past_or_malformed_times_are_422(user_client, spec, detail):
    response = create(user_client, schedule_spec=spec)
    assert response.status_code == 422
    assert response.json()["detail"].startswith(detail), response.json()
    assert not ScheduledTask.objects.exists() and not PeriodicTask.objects.exists()


def test_the_firing_runs_once_and_the_task_completes(user, user_client, scripted_agent):
    scripted_agent("The launch went well.")
    task = create(user_client).json()
    ScheduledTask.objects.filter(pk=task["id"]).update(run_at=timezone.now() - dt.timedelta(seconds=1))  # its time has come
    assert dispatch(task["id"]) is not None  # what beat's clocked entry sends at run_at
    row = settled(task)
    assert row.trigger == "scheduled" and row.status == "success" and row.run.status == "success"

    shown = user_client.get(f"/api/scheduled-tasks/{task['id']}").json()
    assert shown["status"] == "completed" and shown["next_run_at"] is None and shown["completed_at"] and shown["run_count"] == 1
    assert not PeriodicTask.objects.get(name=entry_name(task["id"])).enabled
    # A second firing (a beat retry) does nothing: the one-off run is used up.
    assert dispatch(task["id"]) is None
    assert ScheduledTaskRun.objects.count() == 1
    # Resuming it needs a time still to come...
    response = user_client.post(f"/api/scheduled-tasks/{task['id']}/resume")
    assert response.status_code == 422 and "is in the past" in response.json()["detail"]
    # ...and a new one re-arms it.
    later = (timezone.now() + dt.timedelta(days=1)).replace(microsecond=0)
    rearmed = user_client.patch(f"/api/scheduled-tasks/{task['id']}", {"schedule_spec": {"run_at": later.isoformat()}}, format="json").json()
    assert rearmed["status"] == "enabled" and rearmed["next_run_at"] == later.astimezone(dt.UTC).isoformat() and rearmed["completed_at"] is None
    entry = PeriodicTask.objects.get(name=entry_name(task["id"]))
    assert entry.enabled and entry.total_run_count == 0 and entry.clocked.clocked_time == later


def test_a_run_that_fails_leaves_the_task_failed(user, user_client, scripted_agent):
    from harness.testing import Reply

    scripted_agent(Reply(status=500, error_message="provider down"))
    task = create(user_client).json()
    dispatch(task["id"])
    assert settled(task).status == "error"
    assert user_client.get(f"/api/scheduled-tasks/{task['id']}").json()["status"] == "failed"


def test_the_preview_and_a_switch_back_to_cron(user_client):
    soon = (timezone.now() + dt.timedelta(hours=3)).replace(microsecond=0)
    preview = user_client.post("/api/scheduled-tasks/preview", {"schedule_type": "once", "run_at": soon.isoformat(), "timezone": "UTC"},
                               format="json").json()
    assert preview["next_runs"] == [soon.astimezone(dt.UTC).isoformat()] and preview["description"].startswith("Once, on ")
    past = user_client.post("/api/scheduled-tasks/preview", {"schedule_type": "once", "run_at": "2001-01-01T00:00", "timezone": "UTC"}, format="json")
    assert past.status_code == 422

    task = create(user_client).json()
    switched = user_client.patch(f"/api/scheduled-tasks/{task['id']}", {"schedule_type": "cron", "schedule_spec": {"cron": "0 7 * * *"}},
                                 format="json").json()
    assert switched["schedule_type"] == "cron" and switched["run_at"] is None and switched["cron"] == "0 7 * * *"
    entry = PeriodicTask.objects.get(name=entry_name(task["id"]))
    assert not entry.one_off and entry.clocked is None and entry.crontab.hour == "7"
