"""The ORM store: full-text retrieval (FTS5 on SQLite, tsvector on PostgreSQL), optimistic
revisions, per-owner isolation."""

from __future__ import annotations

import pytest

from apps.memory.selectors import memory_context
from apps.memory.stores import DjangoMemoryStore
from harness.memory import Fact, RevisionConflict

pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]


def saved(user, *contents, agent=""):
    store = DjangoMemoryStore()
    doc = store.load(str(user.pk), agent)
    doc.facts = [Fact(id=f"f{i}", content=c) for i, c in enumerate(contents)]
    return store.save(doc)


def test_search_finds_relevant_facts_best_first_and_follows_edits(user):
    saved(user, "Owns a sailboat", "Drinks coffee", "Sailboat racing on weekends with the sailboat club", "Lives in Porto")
    store = DjangoMemoryStore()
    assert store.search(str(user.pk), "", "sailboat on weekends?", 10) == ["f2", "f0"]  # more matched words rank first
    assert store.search(str(user.pk), "", "tea please", 10) == []
    doc = store.load(str(user.pk))
    doc.fact("f1").content = "Drinks tea"
    doc.facts = [f for f in doc.facts if f.id != "f3"]
    store.save(doc)
    assert store.search(str(user.pk), "", "tea", 10) == ["f1"]
    assert store.search(str(user.pk), "", "coffee porto", 10) == []


def test_search_and_injection_are_per_owner_and_bucket(user, other_user):
    saved(user, "Owns a sailboat")
    saved(other_user, "Owns a sailboat too")
    saved(user, "Agent bucket sailboat", agent="captain")
    assert DjangoMemoryStore().search(str(user.pk), "", "sailboat", 10) == ["f0"]
    text = memory_context(owner_id=user.pk, agent="", query="sailboat", max_tokens=500)
    assert "Owns a sailboat" in text and "too" not in text and "Agent bucket" not in text
    assert memory_context(owner_id=user.pk, agent="nobody", query="sailboat", max_tokens=500) is None


def test_a_stale_revision_is_refused(user):
    store = DjangoMemoryStore()
    saved(user, "One")
    a, b = store.load(str(user.pk)), store.load(str(user.pk))
    a.facts.append(Fact(id="x", content="Two"))
    store.save(a)
    b.facts = []
    with pytest.raises(RevisionConflict):
        store.save(b)
    assert [f.content for f in store.load(str(user.pk)).facts] == ["One", "Two"]
