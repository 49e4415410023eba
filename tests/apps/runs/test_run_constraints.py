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
