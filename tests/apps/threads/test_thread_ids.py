import uuid

import pytest
from django.db import IntegrityError, transaction

from apps.errors import InvalidRequest, NotFound
from apps.threads.models import Thread
from apps.threads.services import thread_create

pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]


@pytest.mark.parametrize("bad", ["", "a" * 65, "has space", "slash/inside", "../up", "dot.ted", "é", "nul\x00", 42])
def test_bad_thread_id_is_refused_before_anything_is_stored(user, bad):
    with pytest.raises(InvalidRequest, match="thread_id"):
        thread_create(owner=user, thread_id=bad)
    assert Thread.objects.count() == 0


def test_good_ids_and_generated_uuid(user):
    assert thread_create(owner=user, thread_id="A-z_09").id == "A-z_09"
    assert thread_create(owner=user, thread_id="x" * 64).id == "x" * 64
    generated = thread_create(owner=user)
    assert uuid.UUID(generated.id).version == 4


def test_create_is_idempotent_for_the_owner_and_refused_for_others(user, other_user):
    first = thread_create(owner=user, thread_id="t1", metadata={"k": "v", "owner_id": "spoof"})
    assert first.metadata == {"k": "v"}
    assert thread_create(owner=user, thread_id="t1").pk == first.pk
    with pytest.raises(NotFound, match="Thread t1 not found"):
        thread_create(owner=other_user, thread_id="t1")
    assert Thread.objects.get().owner == user


def test_database_constraint_rejects_a_bad_id_written_directly(user):
    with pytest.raises(IntegrityError), transaction.atomic():
        Thread.objects.create(id="bad id!", owner=user)
