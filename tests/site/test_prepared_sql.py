"""Prepared lookups return the ORM's own instances, on SQLite and PostgreSQL."""

import pytest
from django.utils import timezone

from apps.threads.models import Thread
from apps.threads.selectors import thread_get_for_user
from deerflow_site.errors import NotFound
from deerflow_site.prepared_sql import ModelLookup

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
