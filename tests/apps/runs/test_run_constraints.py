"""uq_runs_thread_active: at most one pending/running run per thread, enforced by the database."""

import pytest
from django.db import IntegrityError, transaction

from apps.runs.models import Run
from apps.threads.services import thread_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]


def test_second_active_run_on_a_thread_is_refused(user):
    thread = thread_create(owner=user)
    Run.objects.create(thread=thread, owner=user, status=Run.Status.RUNNING)
    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(thread=thread, owner=user, status=Run.Status.PENDING)
    assert Run.objects.filter(thread=thread).count() == 1


def test_finished_run_frees_the_thread(user):
    thread = thread_create(owner=user)
    first = Run.objects.create(thread=thread, owner=user, status=Run.Status.RUNNING)
    first.status = Run.Status.SUCCESS
    first.save(update_fields=["status"])
    second = Run.objects.create(thread=thread, owner=user, status=Run.Status.PENDING)
    assert second.is_active and not Run.objects.get(pk=first.pk).is_active


def test_other_threads_are_not_blocked(user):
    a, b = thread_create(owner=user), thread_create(owner=user)
    Run.objects.create(thread=a, owner=user, status=Run.Status.RUNNING)
    Run.objects.create(thread=b, owner=user, status=Run.Status.RUNNING)
    # Any number of finished runs may sit beside the active one.
    for status in (Run.Status.SUCCESS, Run.Status.ERROR, Run.Status.INTERRUPTED, Run.Status.TIMEOUT):
        Run.objects.create(thread=a, owner=user, status=status)
    assert Run.objects.filter(thread=a).count() == 5


def test_event_seq_is_unique_per_thread(user):
    from apps.runs.models import RunEvent

    thread = thread_create(owner=user)
    run = Run.objects.create(thread=thread, owner=user)
    RunEvent.objects.create(thread=thread, run=run, seq=1, event_type="values", category="state")
    with pytest.raises(IntegrityError), transaction.atomic():
        RunEvent.objects.create(thread=thread, run=run, seq=1, event_type="messages", category="message")
    other = thread_create(owner=user)
    RunEvent.objects.create(thread=other, run=Run.objects.create(thread=other, owner=user), seq=1, event_type="values", category="state")


def test_a_finish_whose_event_seq_is_taken_meanwhile_is_retried_whole(user):
    """Another writer inserting the thread's next seq between the finish's read of the last
    seq and its insert: the finish starts over and lands every row once."""
    from django.db import connection

    from apps.runs.journal import JournalEvent
    from apps.runs.models import RunEvent
    from apps.runs.worker import RunProgress, _finish
    from apps.threads.models import Thread

    thread = thread_create(owner=user)
    Thread.objects.filter(pk=thread.pk).update(status=Thread.Status.BUSY)
    run = Run.objects.create(thread=thread, owner=user, status=Run.Status.RUNNING)
    RunEvent.objects.create(thread=thread, run=run, seq=1, event_type="run.start", category="trace", content={}, metadata={})
    raced = []

    def racing_writer(execute, sql, params, many, context):
        if sql.startswith('INSERT INTO "runs_runevent"') and not raced:
            raced.append(True)
            # The rival's row, with the seq the finish is about to use.
            RunEvent.objects.create(thread=thread, run=run, seq=2, event_type="rival", category="trace", content={}, metadata={})
        return execute(sql, params, many, context)

    events = [JournalEvent("run.end", "outputs", {"answer": 42}, {"status": "success"})]
    with connection.execute_wrapper(racing_writer):
        _finish.func(str(run.pk), status=Run.Status.SUCCESS, thread_status=Thread.Status.IDLE, error="", progress=RunProgress(),
                     title="Done", thread_id=thread.pk, metadata={}, events=events)  # the sync body, on this connection
    assert raced
    run.refresh_from_db()
    thread.refresh_from_db()
    assert run.status == Run.Status.SUCCESS and thread.status == Thread.Status.IDLE and thread.title == "Done"
    # The rival's row went with the failed attempt; the retry wrote the run's event once.
    assert list(RunEvent.objects.filter(thread=thread).order_by("seq").values_list("seq", "event_type")) == [(1, "run.start"), (2, "run.end")]
