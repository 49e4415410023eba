"""Dispatch: one firing becomes one run through start_run(); overlap is settled by the database;
the task run follows its run to the end, wherever the run ends."""

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.runs import services as run_services
from apps.runs.models import Run
from apps.schedules.models import ScheduledTask, ScheduledTaskRun
from apps.schedules import dispatch as dispatch_module
from apps.schedules import services
from apps.schedules.dispatch import DispatchFailed, TaskRunConflict, dispatch
from apps.schedules.tasks import dispatch_scheduled_task
from harness.testing import call, tool_reply
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]


def make_task(user, **data):
    return services.scheduled_task_create(user=user, data={"title": "digest", "prompt": "Summarize the news", "cron": "0 7 * * *", **data})


def settled(task_run_id, timeout=HANG_SECONDS) -> ScheduledTaskRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = ScheduledTaskRun.objects.get(pk=task_run_id)
        if not row.is_active:
            return row
        time.sleep(0.02)
    raise AssertionError(f"task run {task_run_id} stayed {ScheduledTaskRun.objects.get(pk=task_run_id).status}")


def wait_until(predicate, timeout=HANG_SECONDS):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def finish_active_runs():
    for run in Run.objects.filter(status__in=Run.ACTIVE_STATUSES):
        run_services.run_cancel(run=run, action="interrupt", wait=True)


def test_dispatch_admits_the_run_through_start_run(user, scripted_agent, monkeypatch):
    scripted_agent("Here is your digest.")
    calls = []
    real_start_run = run_services.start_run

    def spy(**kwargs):
        calls.append(kwargs)
        return real_start_run(**kwargs)

    monkeypatch.setattr(run_services, "start_run", spy)
    task = make_task(user, options={"thinking_enabled": False})
    row = dispatch_scheduled_task.delay(task.pk)  # eager here; a real worker in test_scheduling_worker.py
    task_run = settled(row.get())
    assert len(calls) == 1 and calls[0]["user"] == user

    run = task_run.run
    assert task_run.status == "success" and task_run.trigger == "scheduled" and run.status == "success"
    # What only start_run() writes: the redacted request and the admission's metadata.
    assert run.metadata == {"origin": "schedule", "scheduled_task_id": task.pk, "scheduled_task_run_id": str(task_run.pk), "trigger": "scheduled"}
    assert run.kwargs["context"] == {"thinking_enabled": False, "non_interactive": True}
    assert run.kwargs["input"] == {"messages": [{"role": "user", "content": "Summarize the news"}]}
    assert run.owner == user and run.thread.owner == user and task_run.thread_id == run.thread_id
    task.refresh_from_db()
    assert task.last_run_id == str(run.pk) and task.last_thread_id == run.thread_id and task.run_count == 1 and task.last_error == ""


def test_each_run_gets_a_fresh_thread_unless_told_to_reuse(user, user_client, scripted_agent):
    scripted_agent("one", "two", "three", "four")
    task = make_task(user)
    first = settled(dispatch(task.pk).pk)
    second = settled(dispatch(task.pk).pk)
    assert first.thread_id != second.thread_id and first.status == second.status == "success"

    tid = user_client.post("/api/threads", {}, format="json").json()["thread_id"]
    reuse = make_task(user, context_mode="reuse_thread", thread_id=tid)
    a, b = settled(dispatch(reuse.pk).pk), settled(dispatch(reuse.pk).pk)
    assert a.thread_id == b.thread_id == tid and Run.objects.filter(thread_id=tid).count() == 2


def test_an_overlapping_firing_is_skipped_and_a_manual_trigger_is_409(user, user_client, scripted_agent):
    scripted_agent(tool_reply(call("slow", seconds=30)), "late")
    task = make_task(user)
    first = dispatch(task.pk)
    wait_until(lambda: ScheduledTaskRun.objects.get(pk=first.pk).status == "running")

    skipped = dispatch(task.pk)
    assert skipped.status == "skipped" and skipped.run is None and skipped.finished_at is not None
    response = user_client.post(f"/api/scheduled-tasks/{task.pk}/trigger")
    assert response.status_code == 409 and "active run" in response.json()["detail"]
    assert user_client.get(f"/api/scheduled-tasks/{task.pk}").json()["status"] == "running"
    assert ScheduledTaskRun.objects.filter(task=task).count() == 2  # the 409 leaves no row

    finish_active_runs()
    assert settled(first.pk).status == "interrupted"
    history = user_client.get(f"/api/scheduled-tasks/{task.pk}/runs").json()
    assert [(r["status"], r["trigger"]) for r in history] == [("skipped", "scheduled"), ("interrupted", "scheduled")]


def test_the_database_settles_the_race_not_the_read(user, scripted_agent, monkeypatch):
    """With the read-before-insert fast path blinded (as when two dispatches both pass it),
    the partial unique index still refuses the second active row."""
    scripted_agent(tool_reply(call("slow", seconds=30)), "late")
    task = make_task(user)
    first = dispatch(task.pk)
    monkeypatch.setattr(dispatch_module.selectors, "task_has_active_run", lambda task_id: False)
    second = dispatch(task.pk)
    assert second.status == "skipped" and "another dispatch" in second.error
    with pytest.raises(TaskRunConflict):
        dispatch(task.pk, trigger="manual")
    assert ScheduledTaskRun.objects.filter(task=task, status__in=["queued", "running"]).count() == 1
    assert Run.objects.filter(status__in=Run.ACTIVE_STATUSES).count() == 1
    finish_active_runs()
    settled(first.pk)


def test_two_concurrent_dispatches_leave_one_active_run_and_one_skip(user, scripted_agent):
    scripted_agent(tool_reply(call("slow", seconds=30)), "late", loop=True)
    task = make_task(user)
    barrier = threading.Barrier(2)
    results, errors = [], []

    def fire(trigger):
        from django.db import connection

        try:
            barrier.wait(5)
            results.append(dispatch(task.pk, trigger=trigger))
        except TaskRunConflict as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=fire, args=("scheduled",)), threading.Thread(target=fire, args=("scheduled",))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    rows = ScheduledTaskRun.objects.filter(task=task)
    assert sorted(r.status for r in rows) == ["running", "skipped"] and not errors
    assert Run.objects.filter(status__in=Run.ACTIVE_STATUSES).count() == 1
    finish_active_runs()
    assert {settled(r.pk).status for r in rows} == {"interrupted", "skipped"}


def test_a_deleted_agent_records_a_clear_error_and_the_task_stays_listed(user, user_client, scripted_agent):
    task = make_task(user)
    ScheduledTask.objects.filter(pk=task.pk).update(assistant_id="research-bot")  # the agent was deleted since
    row = dispatch(task.pk)
    assert row.status == "error" and row.error == "The run could not be started: Assistant research-bot not found"
    assert not Run.objects.exists()
    listed = user_client.get("/api/scheduled-tasks").json()
    assert [t["id"] for t in listed] == [task.pk] and "research-bot not found" in listed[0]["last_error"]
    response = user_client.post(f"/api/scheduled-tasks/{task.pk}/trigger")
    assert response.status_code == 502 and "research-bot not found" in response.json()["detail"]
    assert ScheduledTaskRun.objects.filter(task=task, status="error").count() == 2


def test_a_deleted_reused_thread_records_an_error(user, user_client, scripted_agent):
    tid = user_client.post("/api/threads", {}, format="json").json()["thread_id"]
    task = make_task(user, context_mode="reuse_thread", thread_id=tid)
    assert user_client.delete(f"/api/threads/{tid}").status_code == 204
    row = dispatch(task.pk)
    assert row.status == "error" and f"Thread {tid} not found" in row.error


def test_manual_trigger_runs_now_even_when_paused(user, user_client, scripted_agent):
    scripted_agent("manual answer")
    task = make_task(user, enabled=False)
    assert dispatch(task.pk) is None  # beat racing a pause: nothing happens
    response = user_client.post(f"/api/scheduled-tasks/{task.pk}/trigger")
    assert response.status_code == 200 and response.json()["triggered"] is True
    row = settled(response.json()["task_run"]["id"])
    assert row.trigger == "manual" and row.status == "success" and row.run.metadata["trigger"] == "manual"


def test_a_failed_run_marks_the_task_run_as_error(user, scripted_agent):
    from harness.testing import Reply

    scripted_agent(Reply(status=400, text="bad request"))
    task = make_task(user)
    row = settled(dispatch(task.pk).pk)
    assert row.status == "error" and row.error and row.error == row.run.error
    task.refresh_from_db()
    assert task.last_error == row.error


def test_orphan_recovery_and_cancel_of_an_unheld_run_settle_the_task_run(user):
    from apps.threads.services import thread_create

    task = make_task(user)

    def running_pair(lease_expires_at):
        row = ScheduledTaskRun.objects.create(task=task, trigger="scheduled", status="running")
        run = Run.objects.create(thread=thread_create(owner=user), owner=user, status="running", lease_owner="gone:1",
                                 lease_expires_at=lease_expires_at,
                                 metadata={"origin": "schedule", "scheduled_task_id": task.pk, "scheduled_task_run_id": str(row.pk)})
        return row, run

    orphan_row, _ = running_pair(timezone.now() - timedelta(minutes=5))
    assert run_services.runs_recover_orphans() == 1
    orphan_row.refresh_from_db()
    assert orphan_row.status == "error" and "stopped before it finished" in orphan_row.error

    # A live lease held by another process: the cancel is that process's to carry out.
    unheld_row, run = running_pair(timezone.now() + timedelta(minutes=5))
    run_services.run_cancel(run=run, action="interrupt")
    unheld_row.refresh_from_db()
    assert unheld_row.status == "running" and run.cancel_requested_at is not None
    # Once that process is gone (lease lapsed), cancelling settles the run and its row here.
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_services.run_cancel(run=run, action="interrupt")
    unheld_row.refresh_from_db()
    assert unheld_row.status == "interrupted" and unheld_row.run_id == run.pk


def test_unattended_runs_have_no_clarification_tool(user, user_client, scripted_agent, settings):
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    model = scripted_agent("scheduled answer", "interactive answer")
    task = make_task(user)
    settled(dispatch(task.pk).pk)
    tid = user_client.post("/api/threads", {}, format="json").json()["thread_id"]
    client = APIClient()
    client.force_authenticate(user)
    run = client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "hi"}]}}, format="json").json()
    wait_until(lambda: not Run.objects.get(pk=run["run_id"]).is_active)
    scheduled_tools, interactive_tools = model.requests[0].tools, model.requests[1].tools
    assert "ask_clarification" in interactive_tools
    assert "ask_clarification" not in scheduled_tools
    assert set(interactive_tools) - set(scheduled_tools) == {"ask_clarification"}


def test_a_dispatch_that_died_does_not_block_the_task_forever(user, scripted_agent):
    scripted_agent("after the crash")
    task = make_task(user)
    dead = ScheduledTaskRun.objects.create(task=task, trigger="scheduled", status="queued")
    assert dispatch(task.pk).status == "skipped"  # a fresh queued row is respected
    ScheduledTaskRun.objects.filter(pk=dead.pk).update(created_at=timezone.now() - timedelta(minutes=10))
    row = settled(dispatch(task.pk).pk)
    dead.refresh_from_db()
    assert dead.status == "error" and "did not complete" in dead.error and row.status == "success"


def test_an_unexpected_failure_settles_the_row_and_propagates(user, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(run_services, "start_run", broken)
    task = make_task(user)
    with pytest.raises(RuntimeError):
        dispatch(task.pk)
    row = ScheduledTaskRun.objects.get(task=task)
    assert row.status == "error" and row.error == "The run could not be started: RuntimeError: database went away"
