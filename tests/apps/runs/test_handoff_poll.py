"""The servers' poll for runs a stream-less process offered (apps/runs/handoff.py): its SQL is
built once per connection, and it must find exactly what the ORM query it replaced found."""

from __future__ import annotations

import pytest

from apps.runs.handoff import OFFERED, _offered_runs
from apps.runs.models import Run, ThreadReservation
from apps.threads.models import Thread

pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]


def _run(user, **fields) -> Run:
    return Run.objects.create(thread=Thread.objects.create(owner=user), owner=user, **fields)


def test_the_poll_finds_the_offered_pending_runs_and_nothing_else(user):
    offered = [_run(user, status=Run.Status.PENDING, lease_owner=OFFERED) for _ in range(3)]
    _run(user, status=Run.Status.PENDING, lease_owner="host:4242")  # a process's own
    _run(user, status=Run.Status.RUNNING, lease_owner=OFFERED)  # taken meanwhile
    ThreadReservation.objects.create(thread=Thread.objects.create(owner=user), owner=user, status=Run.Status.PENDING,
                                     lease_owner=OFFERED, kind=Run.Kind.CHECKPOINT_WRITE)  # not a run

    found = _offered_runs()
    orm = [(str(pk), thread_id) for pk, thread_id in
           Run.objects.filter(status=Run.Status.PENDING, lease_owner=OFFERED).values_list("pk", "thread_id")[:20]]
    assert found == orm
    assert sorted(found) == sorted((str(run.pk), run.thread_id) for run in offered)
    assert all(run_id.count("-") == 4 for run_id, _ in found)  # the run ids the API and the bridge use


def test_the_poll_takes_twenty_at_a_time(user):
    for _ in range(23):
        _run(user, status=Run.Status.PENDING, lease_owner=OFFERED)
    assert len(_offered_runs()) == 20
