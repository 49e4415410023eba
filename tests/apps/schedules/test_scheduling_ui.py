"""The scheduled-tasks page and the admin: list actions (trigger now, enable, disable) and a
change form that refuses what the API refuses."""

import time

import pytest
from django_celery_beat.models import PeriodicTask

from apps.schedules.models import ScheduledTask, ScheduledTaskRun
from apps.schedules.beat import entry_name
from apps.schedules.services import scheduled_task_create
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.django_db(transaction=True)]


def make_task(user, **data):
    return scheduled_task_create(user=user, data={"title": "digest", "prompt": "Summarize", "cron": "0 7 * * *", **data})


def test_the_page_needs_a_sign_in_and_loads_its_script(client, user):
    assert client.get("/schedules/").status_code == 302
    client.force_login(user)
    page = client.get("/schedules/")
    body = page.content.decode()
    assert page.status_code == 200
    assert 'id="task-form"' in body and "schedules/schedules.js" in body and 'id="cron-preview"' in body
    assert 'name="csrf-token"' in body and "schedule-page-data" in body and '"name": "test-model"' in body


def test_admin_actions_trigger_enable_and_disable(admin_client, user, scripted_agent):
    scripted_agent("admin-triggered answer")
    task = make_task(user)
    changelist = "/admin/schedules/scheduledtask/"
    assert admin_client.get(changelist).status_code == 200

    admin_client.post(changelist, {"action": "disable", "_selected_action": [task.pk]})
    assert not ScheduledTask.objects.get(pk=task.pk).enabled and not PeriodicTask.objects.get(name=entry_name(task.pk)).enabled
    admin_client.post(changelist, {"action": "enable", "_selected_action": [task.pk]})
    assert ScheduledTask.objects.get(pk=task.pk).enabled and PeriodicTask.objects.get(name=entry_name(task.pk)).enabled

    admin_client.post(changelist, {"action": "trigger_now", "_selected_action": [task.pk]})
    row = ScheduledTaskRun.objects.get(task=task)
    deadline = time.monotonic() + HANG_SECONDS
    while ScheduledTaskRun.objects.get(pk=row.pk).is_active:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    row.refresh_from_db()
    assert row.trigger == "manual" and row.status == "success"
    assert admin_client.get(f"/admin/schedules/scheduledtask/{task.pk}/change/").status_code == 200
    assert admin_client.get("/admin/schedules/scheduledtaskrun/").status_code == 200


def test_admin_form_refuses_a_bad_cron_and_saves_through_the_service(admin_client, user):
    form = {"owner": user.pk, "title": "weekly", "prompt": "Write the weekly report", "assistant_id": "lead_agent", "options": "{}",
            "schedule_type": "cron", "cron": "0 25 * * *", "timezone": "Europe/Berlin", "enabled": "on", "context_mode": "fresh_thread_per_run", "thread_id": "",
            "overlap_policy": "skip", "task_runs-TOTAL_FORMS": "0", "task_runs-INITIAL_FORMS": "0"}
    refused = admin_client.post("/admin/schedules/scheduledtask/add/", form)
    assert refused.status_code == 200 and "cron: invalid expression" in refused.content.decode()
    assert not ScheduledTask.objects.exists()
    saved = admin_client.post("/admin/schedules/scheduledtask/add/", {**form, "cron": "0 9 * * 1"})
    assert saved.status_code == 302, saved.content.decode()[:2000]
    task = ScheduledTask.objects.get()
    assert task.next_run_at is not None and PeriodicTask.objects.get(name=entry_name(task.pk)).crontab.day_of_week == "1"


def test_admin_creates_a_one_off_task_and_refuses_a_past_time(admin_client, user):
    form = {"owner": user.pk, "title": "launch", "prompt": "Summarize the launch", "assistant_id": "lead_agent", "options": "{}",
            "schedule_type": "once", "cron": "", "run_at_0": "2001-01-01", "run_at_1": "09:00", "timezone": "UTC", "enabled": "on",
            "context_mode": "fresh_thread_per_run", "thread_id": "", "overlap_policy": "skip",
            "task_runs-TOTAL_FORMS": "0", "task_runs-INITIAL_FORMS": "0"}
    refused = admin_client.post("/admin/schedules/scheduledtask/add/", form)
    assert refused.status_code == 200 and "is in the past" in refused.content.decode()
    assert not ScheduledTask.objects.exists()
    saved = admin_client.post("/admin/schedules/scheduledtask/add/", {**form, "run_at_0": "2999-12-24"})
    assert saved.status_code == 302, saved.content.decode()[:3000]
    task = ScheduledTask.objects.get()
    assert task.is_once and task.cron == "" and task.next_run_at == task.run_at
    entry = PeriodicTask.objects.get(name=entry_name(task.pk))
    assert entry.one_off and entry.clocked.clocked_time == task.run_at
    listing = admin_client.get("/admin/schedules/scheduledtask/").content.decode()
    assert "Once, on Tue 24 Dec 2999 at 09:00" in listing
    # Editing the title keeps the schedule; the change form shows the task.
    page = admin_client.get(f"/admin/schedules/scheduledtask/{task.pk}/change/")
    assert page.status_code == 200 and "Schedule type" in page.content.decode()


def test_admin_links_from_before_the_move_still_land(admin_client, user):
    # Scheduled tasks were listed under the runs app in admin until they got an app of their own.
    task = make_task(user)
    old = admin_client.get(f"/admin/runs/scheduledtask/{task.pk}/change/?_changelist_filters=enabled")
    assert old.status_code == 301 and old["Location"] == f"/admin/schedules/scheduledtask/{task.pk}/change/?_changelist_filters=enabled"
    assert admin_client.get(old["Location"]).status_code == 200
    assert admin_client.get("/admin/runs/scheduledtaskrun/")["Location"] == "/admin/schedules/scheduledtaskrun/"
    assert admin_client.get("/admin/runs/run/").status_code == 200  # the runs themselves stay where they were
