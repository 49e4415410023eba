"""Prepared lookups return the ORM's own instances, on SQLite and PostgreSQL."""

import pytest
from django.utils import timezone

from apps.errors import NotFound
from apps.threads.models import Thread
from apps.threads.selectors import thread_get_for_user
from deerflow_site.db.prepared_sql import ModelLookup

pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_a_prepared_lookup_returns_what_the_orm_returns(user):
    thread = Thread.objects.create(owner=user, title="Trip plans", metadata={"graph_id": "lead_agent", "tags": ["a", 1]},
                                   pinned_at=timezone.now())
    found = ModelLookup(Thread, "id", "owner_id").first(thread.pk, user.pk)
    orm = Thread.objects.get(pk=thread.pk)
    assert _fields(found) == _fields(orm)
    assert found.metadata == {"graph_id": "lead_agent", "tags": ["a", 1]} and found.pinned_at.tzinfo is not None
    assert found._state.adding is False and found._state.db == orm._state.db  # saved and re-saved like any instance
    found.title = "Trip plans, v2"
    found.save(update_fields=["title"])
    assert Thread.objects.get(pk=thread.pk).title == "Trip plans, v2"


def test_the_thread_of_another_user_is_not_found(user, django_user_model):
    thread = Thread.objects.create(owner=user)
    other = django_user_model.objects.create_user(username="mallory", password="pw-mallory-123")
    assert thread_get_for_user(user=user, thread_id=thread.pk).pk == thread.pk
    with pytest.raises(NotFound):
        thread_get_for_user(user=other, thread_id=thread.pk)
    with pytest.raises(NotFound):
        thread_get_for_user(user=user, thread_id="no-such-thread")


def test_a_lookup_with_the_wrong_number_of_values_says_so():
    with pytest.raises(TypeError, match="id, owner_id"):
        ModelLookup(Thread, "id", "owner_id").first("t1")


def test_a_prepared_insert_writes_the_row_the_orm_would(user):
    from apps.runs.models import Run
    from deerflow_site.db.prepared_sql import ModelInsert

    thread = ModelInsert(Thread).create(owner=user, metadata={"graph_id": "lead_agent"})
    assert thread._state.adding is False and thread.created_at is not None and thread.created_at.tzinfo is not None
    run = ModelInsert(Run).create(thread=thread, owner=user, kwargs={"input": {"messages": [{"role": "user", "content": "hé"}]}},
                                  status=Run.Status.RUNNING, started_at=timezone.now())
    stored = Run.objects.get(pk=run.pk)  # the UUID key, as the ORM stores it on each database
    assert _fields(stored) == _fields(run)
    assert stored.kwargs["input"]["messages"][0]["content"] == "hé" and stored.status == "running"
    assert Thread.objects.get(pk=thread.pk).metadata == {"graph_id": "lead_agent"}


def test_text_given_as_another_type_is_written_as_the_orm_writes_it(user):
    """Strings go in as they are; a lazy translation or a number in a text field is still
    turned into its text, as the ORM does."""
    from django.utils.translation import gettext_lazy

    from deerflow_site.db.prepared_sql import ModelInsert

    thread = ModelInsert(Thread).create(owner=user, title=gettext_lazy("Chat"), assistant_id=42)
    stored = Thread.objects.get(pk=thread.pk)
    assert (stored.title, stored.assistant_id) == ("Chat", "42")
    assert stored.owner_id == user.pk


def test_a_prepared_insert_of_several_rows_and_their_max(user):
    from apps.runs.models import Run, RunEvent
    from deerflow_site.db.prepared_sql import ModelInsert, ModelMax

    thread = Thread.objects.create(owner=user)
    run = Run.objects.create(thread=thread, owner=user)
    last_seq = ModelMax(RunEvent, "seq", "thread")
    assert last_seq(thread.pk) is None
    ModelInsert(RunEvent).save(*[RunEvent(thread=thread, run=run, seq=i, event_type="t", category="message", content={"n": i})
                                 for i in (1, 2, 3)])
    assert last_seq(thread.pk) == 3
    rows = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "content", "metadata"))
    assert rows == [(1, {"n": 1}, {}), (2, {"n": 2}, {}), (3, {"n": 3}, {})]
    assert all(e.created_at is not None for e in RunEvent.objects.filter(run=run))


def test_a_prepared_update_sets_only_what_it_is_given(user):
    from apps.runs.models import Run
    from deerflow_site.db.prepared_sql import ModelUpdate

    thread = Thread.objects.create(owner=user, title="Old")
    run = Run.objects.create(thread=thread, owner=user, kwargs={"keep": True})
    finished = timezone.now()
    assert ModelUpdate(Run)(str(run.pk), status="success", finished_at=finished, token_usage={"by_model": {"m": 1}}) == 1
    stored = Run.objects.get(pk=run.pk)
    assert (stored.status, stored.finished_at, stored.token_usage, stored.kwargs) == ("success", finished, {"by_model": {"m": 1}}, {"keep": True})
    other = Thread.objects.create(owner=user)
    assert ModelUpdate(Run)(run.pk, thread=other) == 1  # a related instance stands for its key
    assert Run.objects.get(pk=run.pk).thread_id == other.pk
    assert ModelUpdate(Run)(run.pk, thread_id=thread.pk) == 1
    assert Run.objects.get(pk=run.pk).thread_id == thread.pk
    untitled = ModelUpdate(Thread, "pk", "title")
    assert untitled(thread.pk, "", title="New") == 0  # it has a title: left alone
    assert untitled(thread.pk, "Old", title="New") == 1
    assert Thread.objects.get(pk=thread.pk).title == "New"
    with pytest.raises(TypeError, match="pk, title"):
        untitled(thread.pk, title="x")
    with pytest.raises(TypeError, match="nothing to set"):
        ModelUpdate(Thread)(thread.pk)
