"""Thread reservations (apps/runs/reservations.py): an operation that rewrites a thread holds
the same active slot as a run, so neither starts while the other holds the thread; a dead
process's reservation is recovered like a run; reservations are never listed as runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.errors import NotFound, ThreadBusy
from apps.runs.models import Run, ThreadReservation
from apps.runs.reservations import Kind, held_reservations, thread_reserved
from apps.runs.services import runs_recover_orphans
from apps.runs.worker import _leases_tick
from apps.threads.models import Thread
from tests.apps.runs.test_runs_api import new_thread, wait_for_model_calls, wait_for_status
from harness.testing import call, tool_reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]

RUN = {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hello"}]}}


def dead_reservation(tid: str, user, kind: str = Kind.CHECKPOINT_WRITE) -> ThreadReservation:
    """The row a process leaves when it dies mid-operation: its lease has lapsed."""
    return ThreadReservation.objects.create(thread_id=tid, owner=user, kind=kind, status=Run.Status.RUNNING,
                                            lease_owner="gone-host:4242", lease_expires_at=timezone.now() - timedelta(seconds=1))


@pytest.mark.parametrize("strategy", ["reject", "interrupt", "rollback"])
def test_a_run_is_refused_while_an_operation_holds_the_thread_and_admitted_after(user_client, scripted_agent, strategy):
    scripted_agent("the answer")
    tid = new_thread(user_client)
    thread = Thread.objects.get(pk=tid)
    with thread_reserved(thread=thread, kind=Kind.CHECKPOINT_WRITE):
        refused = user_client.post(f"/api/threads/{tid}/runs", {**RUN, "multitask_strategy": strategy}, format="json")
        # Never interrupted: the run would start from a head that is being rewritten.
        assert refused.status_code == 409
        assert refused.json()["detail"] == f"Thread {tid} is busy: its history is being rewritten (a compaction or a state update); try again when it has finished"
        # The reservation is not a run: not in the thread's runs, and the thread is not busy.
        assert user_client.get(f"/api/threads/{tid}/runs").json() == []
        assert user_client.get(f"/api/threads/{tid}").json()["status"] == "idle"
    admitted = user_client.post(f"/api/threads/{tid}/runs", RUN, format="json")
    assert admitted.status_code == 200, admitted.content
    assert wait_for_status(admitted.json()["run_id"], {"success", "error"}).status == "success"
    assert [r["run_id"] for r in user_client.get(f"/api/threads/{tid}/runs").json()] == [admitted.json()["run_id"]]
    assert not ThreadReservation.objects.exists()


def test_an_operation_is_refused_while_a_run_holds_the_thread(user_client, scripted_agent):
    model = scripted_agent(tool_reply(call("slow", seconds=30)), "done")
    tid = new_thread(user_client)
    run = user_client.post(f"/api/threads/{tid}/runs", RUN, format="json").json()
    wait_for_model_calls(model, 1)
    thread = Thread.objects.get(pk=tid)
    entered = []
    with pytest.raises(ThreadBusy) as refused:
        with thread_reserved(thread=thread, kind=Kind.BRANCH, run_busy_detail="wait for the run"):
            entered.append(True)
    assert refused.value.detail == "wait for the run" and not entered
    assert not ThreadReservation.objects.exists()
    # The same through a route: a state update during the run.
    response = user_client.post(f"/api/threads/{tid}/state", {"values": {"title": "x"}}, format="json")
    assert response.status_code == 409 and "active run" in response.json()["detail"]
    user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel?wait=1")
    wait_for_status(run["run_id"], {"interrupted"})


def test_two_operations_exclude_each_other_and_name_what_holds_the_thread(user_client):
    tid = new_thread(user_client)
    thread = Thread.objects.get(pk=tid)
    with thread_reserved(thread=thread, kind=Kind.ARTIFACT_WRITE):
        with pytest.raises(ThreadBusy) as refused, thread_reserved(thread=thread, kind=Kind.CHECKPOINT_WRITE):
            pass
        assert refused.value.detail == f"Thread {tid} is busy: one of its files is being edited; try again when it has finished"
        deleted = user_client.delete(f"/api/threads/{tid}")
        assert deleted.status_code == 409 and "being edited" in deleted.json()["detail"]
    assert user_client.delete(f"/api/threads/{tid}").status_code == 204
    assert not Thread.objects.filter(pk=tid).exists()


def test_the_block_failing_releases_the_thread(user_client):
    tid = new_thread(user_client)
    thread = Thread.objects.get(pk=tid)
    with pytest.raises(RuntimeError), thread_reserved(thread=thread, kind=Kind.BRANCH):
        assert ThreadReservation.objects.filter(thread_id=tid, kind=Kind.BRANCH).count() == 1
        raise RuntimeError("the operation failed")
    assert not Run.slots.filter(thread_id=tid).exists()
    assert held_reservations() == []


def test_a_dead_process_reservation_gives_way_to_the_next_run(user_client, user, scripted_agent):
    scripted_agent("after the crash")
    tid = new_thread(user_client)
    dead_reservation(tid, user)
    response = user_client.post(f"/api/threads/{tid}/runs", RUN, format="json")
    assert response.status_code == 200, response.content
    assert wait_for_status(response.json()["run_id"], {"success", "error"}).status == "success"
    assert not ThreadReservation.objects.exists()


def test_the_sweep_drops_a_dead_reservation_and_leaves_a_live_one(user_client, user):
    dead_tid, live_tid = new_thread(user_client), new_thread(user_client)
    dead = dead_reservation(dead_tid, user, kind=Kind.DELETE)
    live = ThreadReservation.objects.create(thread_id=live_tid, owner=user, kind=Kind.BRANCH, status=Run.Status.RUNNING,
                                            lease_owner="other-host:1", lease_expires_at=timezone.now() + timedelta(seconds=60))
    assert runs_recover_orphans() == 1
    assert list(ThreadReservation.objects.values_list("pk", flat=True)) == [live.pk]
    assert not Run.slots.filter(pk=dead.pk).exists()
    # Nothing of the dead reservation became history: no run, no error on the thread.
    assert user_client.get(f"/api/threads/{dead_tid}/runs").json() == []
    assert Thread.objects.get(pk=dead_tid).status == Thread.Status.IDLE


def test_the_lease_keeper_renews_a_held_reservation(user_client):
    tid = new_thread(user_client)
    thread = Thread.objects.get(pk=tid)
    with thread_reserved(thread=thread, kind=Kind.CHECKPOINT_WRITE) as reservation:
        soon = timezone.now() + timedelta(seconds=1)
        Run.slots.filter(pk=reservation.pk).update(lease_expires_at=soon)
        assert held_reservations() == [str(reservation.pk)]
        assert _leases_tick.func(held_reservations(), renew=True) == {}  # the keeper's tick, on this connection
        assert Run.slots.get(pk=reservation.pk).lease_expires_at > soon + timedelta(seconds=5)


def test_the_admin_lists_reservations_apart_from_runs(admin_client, user_client, user):
    tid = new_thread(user_client)
    thread = Thread.objects.get(pk=tid)
    with thread_reserved(thread=thread, kind=Kind.ARTIFACT_WRITE) as reservation:
        listed = admin_client.get("/admin/runs/threadreservation/")
        assert listed.status_code == 200 and str(reservation.pk) in listed.content.decode()
        assert "artifact write" in listed.content.decode()
        runs = admin_client.get("/admin/runs/run/")
        assert runs.status_code == 200 and str(reservation.pk) not in runs.content.decode()
        page = admin_client.get(f"/admin/runs/threadreservation/{reservation.pk}/change/")
        assert page.status_code == 200 and tid in page.content.decode()


def test_reserving_a_thread_deleted_meanwhile_is_not_found(user_client):
    tid = new_thread(user_client)
    thread = Thread.objects.get(pk=tid)
    Thread.objects.filter(pk=tid).delete()  # another request's delete, after this one read the row
    with pytest.raises(NotFound), thread_reserved(thread=thread, kind=Kind.ARTIFACT_WRITE):
        pass
    assert not Run.slots.exists()
