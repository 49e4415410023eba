"""A real Celery worker process (not eager mode) picks up scheduled-task dispatches: from beat's
own DatabaseScheduler and from a plain ``delay()`` over the embedded filesystem broker, and over
Redis when a broker URL is set."""

import contextlib
import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.schedules.models import ScheduledTaskRun
from apps.schedules.beat import entry_name
from apps.schedules.services import scheduled_task_create
from deerflow_site.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _stop_taking_offers() -> bool:
    """This process plays no server here. An in-process import of the ASGI app by an earlier
    test (the suite runs files in any order on its workers) starts a server's poll for the runs
    that stream-less processes offer (apps/runs/handoff.py); it would take the worker's runs."""
    from apps.runs import runtime as runs_runtime

    runtime = runs_runtime._runtime
    if runtime is None or runtime._loop is None:
        return False

    async def cancel() -> bool:
        polls = [t for t in runtime._background if t.get_name() == "run-offers" and not t.done()]
        for task in polls:
            task.cancel()
        return bool(polls)

    return runtime.call(cancel, timeout=10)


@contextlib.contextmanager
def _worker(tmp_path, **extra_env):
    """A `celery worker` subprocess sharing this test's database file and DEER_FLOW_HOME."""
    if connection.vendor != "sqlite":
        pytest.skip("the worker shares the test database file (SQLite tier)")
    # This process is the producer: really send, never run tasks inline.
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "DEERFLOW_AGENT_FACTORY": "tests.support.agents:make_scripted_agent",
        **extra_env,
    }
    log = tmp_path / "worker.log"
    polled = _stop_taking_offers()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "deerflow_site", "worker", "-P", "solo", "--without-mingle",
             "--without-gossip", "--without-heartbeat", "-l", "info", "-n", f"test-{os.getpid()}@%h"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "ready." not in log.read_text(errors="replace"):
            assert process.poll() is None, f"the worker exited:\n{log.read_text(errors='replace')}"
            assert time.monotonic() < deadline, f"the worker did not start:\n{log.read_text(errors='replace')}"
            time.sleep(0.1)
        yield process, log
    finally:
        celery_app.conf.task_always_eager = eager
        if polled:
            from apps.runs.handoff import serve_offered_runs

            serve_offered_runs()
        # A cold shutdown: nothing of the worker's needs to survive the test.
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@pytest.fixture
def celery_worker_process(tmp_path):
    with _worker(tmp_path) as started:
        yield started


def _settled(task, count, log, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = list(ScheduledTaskRun.objects.filter(task=task).select_related("run"))
        if len(rows) >= count and not any(r.is_active for r in rows):
            return rows
        time.sleep(0.1)
    raise AssertionError(f"no settled task run; worker log:\n{log.read_text(errors='replace')}")


def test_beat_fires_and_a_real_worker_runs_the_task(user, celery_worker_process):
    from django_celery_beat.schedulers import DatabaseScheduler

    process, log = celery_worker_process
    task = scheduled_task_create(user=user, data={"title": "every minute", "prompt": "ping", "cron": "* * * * *"})
    # Beat last fired this entry five minutes ago, so its next tick finds it due.
    PeriodicTask.objects.filter(name=entry_name(task.pk)).update(last_run_at=timezone.now() - dt.timedelta(minutes=5))
    scheduler = DatabaseScheduler(app=celery_app)
    scheduler.tick()

    [row] = _settled(task, 1, log)
    assert row.trigger == "scheduled" and row.status == "success", (row.error, log.read_text())
    assert row.run.status == "success" and row.run.metadata["origin"] == "schedule"
    # It executed in the worker process, not here: the worker holds the lease it renewed.
    assert row.run.lease_owner.endswith(f":{process.pid}")
    assert "dispatch_scheduled_task" in log.read_text() and "succeeded" in log.read_text()

    from apps.schedules.tasks import dispatch_scheduled_task

    dispatch_scheduled_task.delay(task.pk, "manual")
    rows = _settled(task, 2, log)
    assert sorted((r.trigger, r.status) for r in rows) == [("manual", "success"), ("scheduled", "success")]


def test_beat_fires_a_one_off_task_once_and_it_completes(user, celery_worker_process):
    from django_celery_beat.models import ClockedSchedule
    from django_celery_beat.schedulers import DatabaseScheduler

    from apps.schedules.models import ScheduledTask

    process, log = celery_worker_process
    run_at = timezone.now() + dt.timedelta(hours=1)
    task = scheduled_task_create(user=user, data={"title": "once", "prompt": "ping", "schedule_type": "once",
                                                  "schedule_spec": {"run_at": run_at.isoformat()}})
    # An hour later, as beat sees it.
    ClockedSchedule.objects.filter(pk=PeriodicTask.objects.get(name=entry_name(task.pk)).clocked_id).update(
        clocked_time=timezone.now() - dt.timedelta(seconds=1))
    scheduler = DatabaseScheduler(app=celery_app)
    scheduler.tick()
    [row] = _settled(task, 1, log)
    assert row.trigger == "scheduled" and row.status == "success", (row.error, log.read_text())
    task.refresh_from_db()
    assert task.completed_at is not None and task.next_run_at is None
    # Beat's next ticks do not fire it again.
    scheduler.tick()
    DatabaseScheduler(app=celery_app).tick()
    time.sleep(1)
    assert ScheduledTaskRun.objects.filter(task=task).count() == 1
    assert not PeriodicTask.objects.get(name=entry_name(task.pk)).enabled


@pytest.mark.redis
def test_a_real_worker_on_redis(user, own_redis_url, tmp_path):
    redis_url = own_redis_url
    from apps.schedules.tasks import dispatch_scheduled_task

    task = scheduled_task_create(user=user, data={"title": "over redis", "prompt": "ping", "cron": "0 7 * * *"})
    with _worker(tmp_path, CELERY_BROKER_URL=redis_url) as (process, log):
        assert "redis://" in log.read_text()
        with celery_app.connection_for_write(redis_url) as broker:
            dispatch_scheduled_task.apply_async(args=[task.pk, "manual"], connection=broker)
        [row] = _settled(task, 1, log)
    assert row.status == "success" and row.run.lease_owner.endswith(f":{process.pid}")
