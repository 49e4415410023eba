"""Scheduled tasks: cron and time zones (DST), the beat entry following the task, the API."""

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from apps.errors import InvalidRequest
from apps.schedules import services
from apps.schedules.beat import DISPATCH_TASK, entry_name
from apps.schedules.cron import next_runs, parse_cron, parse_timezone, preview
from apps.schedules.models import ScheduledTask

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(*args):
    return dt.datetime(*args, tzinfo=dt.UTC)


# -- cron and time zones --------------------------------------------------------------------


def test_weekday_mornings_in_a_zone():
    runs = next_runs(parse_cron("30 7 * * 1-5"), BERLIN, after=utc(2026, 5, 1, 12))  # a Friday
    assert [r.isoformat() for r in runs] == [
        "2026-05-04T07:30:00+02:00", "2026-05-05T07:30:00+02:00", "2026-05-06T07:30:00+02:00",
        "2026-05-07T07:30:00+02:00", "2026-05-08T07:30:00+02:00",
    ]


def test_local_time_holds_across_the_spring_change_and_the_gap_is_skipped():
    # Berlin moves from 02:00 CET to 03:00 CEST on 2026-03-29.
    nine = next_runs(parse_cron("0 9 * * *"), BERLIN, after=utc(2026, 3, 28, 0), count=2)
    assert [r.astimezone(dt.UTC).hour for r in nine] == [8, 7]  # 09:00 local both days; UTC shifts
    assert all(r.hour == 9 for r in nine)
    gap = next_runs(parse_cron("30 2 * * *"), BERLIN, after=utc(2026, 3, 27, 12), count=3)
    assert [r.date().isoformat() for r in gap] == ["2026-03-28", "2026-03-30", "2026-03-31"]  # 02:30 on the 29th does not exist


def test_the_repeated_hour_in_autumn_fires_once():
    # New York repeats 01:00-02:00 on 2026-11-01.
    runs = next_runs(parse_cron("30 1 * * *"), NEW_YORK, after=utc(2026, 10, 31, 12), count=3)
    assert [r.date().isoformat() for r in runs] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert runs[0].utcoffset() == dt.timedelta(hours=-4)  # the first 01:30 (still EDT)
    hourly = next_runs(parse_cron("15 * * * *"), NEW_YORK, after=utc(2026, 11, 1, 4, 20), count=3)
    assert [r.astimezone(dt.UTC).strftime("%H:%M") for r in hourly] == ["05:15", "07:15", "08:15"]


def test_sunday_as_seven_and_preview_describes():
    assert parse_cron("0 8 * * 7").weekdays == frozenset({0})
    result = preview("0 8 * * 1", "UTC", now=utc(2026, 6, 1, 9))
    assert result["description"] == "At 08:00, only on Monday"
    assert result["next_runs"][0] == "2026-06-08T08:00:00+00:00" and len(result["next_runs"]) == 5


@pytest.mark.parametrize("expression, fragment", [
    ("* * *", "expected 5 fields"), ("61 * * * *", "61 > 59"), ("0 0 30 2 *", "never"), ("", "required"), ("a b c d e", "cron"),
])
def test_bad_cron_is_refused_naming_the_field(expression, fragment):
    with pytest.raises(InvalidRequest) as err:
        preview(expression, "UTC", now=utc(2026, 1, 1))
    assert err.value.detail.startswith("cron:") and fragment in err.value.detail


def test_unknown_time_zone_is_refused():
    with pytest.raises(InvalidRequest, match="^timezone: unknown time zone 'Mars/Olympus'"):
        parse_timezone("Mars/Olympus")


# -- the beat entry follows the task ---------------------------------------------------------

def _task(user, **data):
    return services.scheduled_task_create(user=user, data={"title": "digest", "prompt": "Summarize the news", "cron": "0 7 * * *",
                                                            "timezone": "Europe/Berlin", **data})


@pytest.mark.django_db
def test_beat_entry_follows_save_disable_and_delete(user):
    task = _task(user)
    entry = PeriodicTask.objects.get(name=entry_name(task.pk))
    assert entry.task == DISPATCH_TASK and json.loads(entry.kwargs) == {"task_id": task.pk} and entry.enabled
    assert (entry.crontab.minute, entry.crontab.hour, str(entry.crontab.timezone)) == ("0", "7", "Europe/Berlin")
    assert task.next_run_at is not None and task.next_run_at.astimezone(BERLIN).hour == 7

    services.scheduled_task_update(task=task, data={"cron": "15 18 * * 1-5", "timezone": "America/New_York"})
    entry.refresh_from_db()
    assert (entry.crontab.minute, entry.crontab.hour, entry.crontab.day_of_week, str(entry.crontab.timezone)) == ("15", "18", "1-5", "America/New_York")
    assert PeriodicTask.objects.filter(name=entry_name(task.pk)).count() == 1

    services.scheduled_task_set_enabled(task=task, enabled=False)
    entry.refresh_from_db()
    assert not entry.enabled and ScheduledTask.objects.get(pk=task.pk).next_run_at is None
    services.scheduled_task_set_enabled(task=task, enabled=True)
    entry.refresh_from_db()
    assert entry.enabled

    services.scheduled_task_delete(task=task)
    assert not PeriodicTask.objects.filter(name=entry_name(task.pk)).exists()


@pytest.mark.django_db
def test_a_failed_update_leaves_task_and_entry_as_they_were(user):
    task = _task(user)
    with pytest.raises(InvalidRequest):
        services.scheduled_task_update(task=ScheduledTask.objects.get(pk=task.pk), data={"cron": "0 9 * * *", "timezone": "Nowhere/Else"})
    entry = PeriodicTask.objects.get(name=entry_name(task.pk))
    assert entry.crontab.hour == "7" and ScheduledTask.objects.get(pk=task.pk).cron == "0 7 * * *"


@pytest.mark.django_db
def test_deleting_the_owner_removes_the_beat_entry(user):
    task = _task(user)
    user.delete()
    assert not ScheduledTask.objects.filter(pk=task.pk).exists()
    assert not PeriodicTask.objects.filter(name=entry_name(task.pk)).exists()


@pytest.mark.django_db
def test_beats_database_scheduler_reads_the_entry(user):
    from django_celery_beat.schedulers import DatabaseScheduler

    from deerflow_site.celery import app

    task = _task(user, cron="*/5 * * * *", timezone="Asia/Tokyo")
    scheduler = DatabaseScheduler(app=app, lazy=True)
    entry = scheduler.all_as_schedule()[entry_name(task.pk)]
    assert entry.task == DISPATCH_TASK and entry.kwargs == {"task_id": task.pk}
    assert str(entry.schedule.tz) == "Asia/Tokyo" and entry.schedule.minute == set(range(0, 60, 5))
    assert CrontabSchedule.objects.filter(minute="*/5", timezone="Asia/Tokyo").count() == 1


# -- the API ------------------------------------------------------------------------------------

def _create(client, **data):
    body = {"title": "Morning digest", "prompt": "Summarize AI news", "schedule_type": "cron", "schedule_spec": {"cron": "30 7 * * 1-5"},
            "timezone": "Europe/Berlin", **data}
    return client.post("/api/scheduled-tasks", body, format="json")


@pytest.mark.django_db
def test_create_list_read_update_pause_resume_delete(user_client):
    response = _create(user_client)
    assert response.status_code == 201, response.content
    task = response.json()
    assert task["id"].startswith("task-") and task["status"] == "enabled" and task["cron"] == "30 7 * * 1-5"
    assert task["context_mode"] == "fresh_thread_per_run" and task["overlap_policy"] == "skip" and task["next_run_at"]
    assert [t["id"] for t in user_client.get("/api/scheduled-tasks").json()] == [task["id"]]
    assert user_client.get(f"/api/scheduled-tasks/{task['id']}").json()["title"] == "Morning digest"

    patched = user_client.patch(f"/api/scheduled-tasks/{task['id']}", {"title": "Evening digest", "cron": "0 19 * * *"}, format="json").json()
    assert patched["title"] == "Evening digest" and patched["next_run_at"] != task["next_run_at"]
    assert user_client.post(f"/api/scheduled-tasks/{task['id']}/pause").json()["status"] == "paused"
    assert not PeriodicTask.objects.get(name=entry_name(task["id"])).enabled
    assert user_client.post(f"/api/scheduled-tasks/{task['id']}/resume").json()["status"] == "enabled"
    assert user_client.delete(f"/api/scheduled-tasks/{task['id']}").json() == {"id": task["id"], "deleted": True}
    assert user_client.get(f"/api/scheduled-tasks/{task['id']}").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("data, field", [
    ({"schedule_spec": {"cron": "70 * * * *"}}, "cron:"),
    ({"timezone": "Europe/Atlantis"}, "timezone:"),
    ({"prompt": "   "}, "prompt:"),
    ({"prompt": "x" * 20001}, "prompt: at most 20000"),
    ({"title": ""}, "title:"),
    ({"schedule_type": "weekly"}, "schedule_type:"),
    ({"options": {"model_name": "nope"}}, "options.model_name:"),
    ({"options": {"colour": "blue"}}, "options:"),
    ({"options": {"approval_policy": "sometimes"}}, "options.approval_policy:"),
    ({"assistant_id": "ghost"}, "assistant_id:"),
    ({"context_mode": "reuse_thread"}, "thread_id:"),
    ({"surprise": 1}, "surprise:"),
])
def test_bad_input_is_422_naming_the_field(user_client, data, field):
    response = _create(user_client, **data)
    assert response.status_code == 422, response.content
    assert response.json()["detail"].startswith(field), response.json()
    assert not ScheduledTask.objects.exists()


@pytest.mark.django_db
def test_prompt_limit_is_configurable(user_client, settings):
    settings.SCHEDULED_TASK_MAX_PROMPT_CHARS = 10
    assert _create(user_client, prompt="short").status_code == 201
    assert _create(user_client, prompt="far too long a prompt").json()["detail"] == "prompt: at most 10 characters (got 21)"


@pytest.mark.django_db
def test_reuse_thread_needs_the_callers_thread(user_client, other_user):
    from apps.threads.services import thread_create

    theirs = thread_create(owner=other_user)
    assert _create(user_client, context_mode="reuse_thread", thread_id=theirs.pk).status_code == 404
    mine = user_client.post("/api/threads", {}, format="json").json()["thread_id"]
    created = _create(user_client, context_mode="reuse_thread", thread_id=mine)
    assert created.status_code == 201 and created.json()["thread_id"] == mine
    assert [t["id"] for t in user_client.get(f"/api/threads/{mine}/scheduled-tasks").json()] == [created.json()["id"]]


@pytest.mark.django_db
def test_preview_route(user_client):
    response = user_client.post("/api/scheduled-tasks/preview", {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}, format="json")
    assert response.status_code == 200 and response.json()["description"] == "At 09:00, Monday through Friday"
    assert len(response.json()["next_runs"]) == 5
    assert user_client.post("/api/scheduled-tasks/preview", {"cron": "0 9 * *"}, format="json").status_code == 422


@pytest.mark.django_db
def test_another_users_task_is_404(user_client, other_user, api_client):
    task = _task(other_user)
    for method, path in [("get", ""), ("patch", ""), ("delete", ""), ("post", "/pause"), ("post", "/resume"), ("post", "/trigger"), ("get", "/runs")]:
        response = getattr(user_client, method)(f"/api/scheduled-tasks/{task.pk}{path}", {}, format="json")
        assert response.status_code == 404, (method, path, response.content)
    assert user_client.get("/api/scheduled-tasks").json() == []
    assert api_client.get("/api/scheduled-tasks").status_code in (401, 403)


# -- the scheduler section of config.yaml ------------------------------------------------------

@pytest.fixture
def scheduler_config(tmp_path, monkeypatch):
    """Point the server at a config.yaml whose scheduler section the test writes."""
    from harness.config import reset_config_cache
    from tests.settings import _ROOT

    base = (_ROOT / "tests" / "fixtures" / "config.yaml").read_text()

    def write(section: str) -> None:
        path = tmp_path / "config.yaml"
        path.write_text(base + section)
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
        reset_config_cache()

    yield write
    reset_config_cache()


@pytest.mark.django_db
def test_scheduler_default_timezone_and_min_interval(user_client, scheduler_config):
    scheduler_config("scheduler:\n  default_timezone: Asia/Tokyo\n  min_interval_minutes: 30\n")
    created = user_client.post("/api/scheduled-tasks", {"title": "t", "prompt": "p", "cron": "0 7 * * *"}, format="json").json()
    assert created["timezone"] == "Asia/Tokyo"
    too_often = user_client.post("/api/scheduled-tasks", {"title": "t", "prompt": "p", "cron": "*/10 * * * *"}, format="json")
    assert too_often.status_code == 422
    assert too_often.json()["detail"] == ("cron: '*/10 * * * *' fires every 10 minute(s); this server allows at most one run every "
                                          "30 minutes (scheduler.min_interval_minutes)")
    assert user_client.post("/api/scheduled-tasks", {"title": "t", "prompt": "p", "cron": "0,30 * * * *"}, format="json").status_code == 201


@pytest.mark.django_db(transaction=True)
def test_a_disabled_scheduler_skips_beats_firings_but_runs_manual_ones(user, scheduler_config, scripted_agent):
    from apps.schedules.models import ScheduledTaskRun
    from apps.schedules.dispatch import dispatch

    scheduler_config("scheduler:\n  enabled: false\n")
    task = _task(user)
    row = dispatch(task.pk)
    assert row.status == "skipped" and row.error == "the scheduler is turned off (scheduler.enabled: false in config.yaml)"
    scripted_agent("ran anyway")
    manual = dispatch(task.pk, trigger=ScheduledTaskRun.Trigger.MANUAL)
    assert manual.status in ("running", "success") and manual.run_id is not None
