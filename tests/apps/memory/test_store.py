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
    text = memory_context(owner_id=user.pk, agent="", query="sailboat", max_tokens=500).text
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


CJK = ["我每天早上喝黑咖啡，不加糖", "週末は京都でお寺を巡るのが好きです", "Lives in Porto and sails on weekends"]


def test_an_update_of_the_summaries_alone_writes_the_profile_and_reads_the_facts(user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    saved(user, "Owns a sailboat", "Drinks coffee")
    store = DjangoMemoryStore()
    doc = store.load(str(user.pk))
    doc.summaries["top_of_mind"] = "naming a cat"
    with CaptureQueriesContext(connection) as queries:
        result = store.save(doc)
    statements = [q["sql"].split()[0].upper() for q in queries.captured_queries if "SAVEPOINT" not in q["sql"].upper()]
    assert statements == ["UPDATE", "SELECT"]  # once per memory update: nothing for the facts it kept
    again = store.load(str(user.pk))
    assert (result.revision, result.updated_at) == (again.revision, again.updated_at) and again.revision == 2
    assert again.summaries["top_of_mind"] == "naming a cat" and [f.content for f in again.facts] == ["Owns a sailboat", "Drinks coffee"]


def test_chinese_and_japanese_facts_are_found_by_a_word_inside_a_sentence_with_fts5_cjk(user):
    saved(user, *CJK)
    store = DjangoMemoryStore()
    # Words: a CJK sentence is one long token, so a word inside it is never found.
    assert store.search(str(user.pk), "", "推荐一种咖啡", 10, "fts5") == []
    assert store.search(str(user.pk), "", "京都のおすすめは？", 10, "fts5") == []
    # Bigrams: 咖啡 (coffee) and 京都 (Kyoto) are found inside their sentences.
    assert store.search(str(user.pk), "", "推荐一种咖啡", 10, "fts5_cjk") == ["f0"]
    assert store.search(str(user.pk), "", "京都のおすすめは？", 10, "fts5_cjk") == ["f1"]
    assert store.search(str(user.pk), "", "weekends in Porto", 10, "fts5_cjk") == ["f2"]  # other text as before
    # Edits are indexed again: the fact now speaks of tea (茶), not coffee.
    doc = store.load(str(user.pk))
    doc.fact("f0").content = "我每天早上喝绿茶"
    store.save(doc)
    assert store.search(str(user.pk), "", "推荐一种咖啡", 10, "fts5_cjk") == []
    assert store.search(str(user.pk), "", "绿茶好喝吗", 10, "fts5_cjk") == ["f0"]


def test_the_adapter_decides_what_injection_puts_first(user):
    saved(user, *[f"Background detail number {i}" for i in range(30)], *CJK)
    def first_fact(adapter):
        block = memory_context(owner_id=user.pk, agent="", query="京都でどこに行けばいい？", max_tokens=2000,
                               retrieval_adapter=adapter).text
        return next(line for line in block.splitlines() if line.startswith("- ["))
    assert first_fact("fts5_cjk") == "- [context] 週末は京都でお寺を巡るのが好きです"
    assert first_fact("fts5") != "- [context] 週末は京都でお寺を巡るのが好きです"


def test_facts_saved_at_the_same_moment_come_newest_saved_first(user):
    """Facts made in one go can share a microsecond; the order they are injected in must not
    then depend on how the database returns ties."""
    from harness.memory.types import Fact, now

    store = DjangoMemoryStore()
    doc = store.load(str(user.pk), "")
    moment = now()
    doc.facts = [Fact(id=f"f{i}", content=f"Detail {i}", created_at=moment) for i in range(5)]
    store.save(doc)
    block = memory_context(owner_id=user.pk, agent="", query="", max_tokens=2000).text
    assert [line for line in block.splitlines() if line.startswith("- [")][:2] == ["- [context] Detail 4", "- [context] Detail 3"]


def test_no_adapter_matches_substrings(user):
    saved(user, "Owns a sailboat", "Drinks coffee")
    store = DjangoMemoryStore()
    assert store.search(str(user.pk), "", "sail", 10, "") == ["f0"]  # part of a word
    assert store.search(str(user.pk), "", "sail", 10, "fts5") == []  # whole words only


def test_an_admin_edit_is_found_by_its_new_words(admin_client, user):
    from apps.memory.models import MemoryFact

    saved(user, "我每天早上喝黑咖啡")
    fact = MemoryFact.objects.get(profile__owner=user, fact_id="f0")
    page = admin_client.get(f"/admin/memory/memoryfact/{fact.pk}/change/")
    form = page.context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data.update(content="我每天早上喝绿茶", created_at_0=fact.created_at.date().isoformat(),
                created_at_1=fact.created_at.time().strftime("%H:%M:%S"), last_confirmed_at_0="", last_confirmed_at_1="",
                valid_until_0="", valid_until_1="")
    data = {k: ("" if v is None else v) for k, v in data.items() if k not in ("created_at", "last_confirmed_at", "valid_until")}
    response = admin_client.post(f"/admin/memory/memoryfact/{fact.pk}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    store = DjangoMemoryStore()
    assert store.search(str(user.pk), "", "绿茶", 10, "fts5_cjk") == ["f0"]
    assert store.search(str(user.pk), "", "咖啡", 10, "fts5_cjk") == []


def test_the_injection_lists_relevant_facts_once_then_the_most_confident(user, monkeypatch):
    from apps.memory import selectors

    store = DjangoMemoryStore()
    doc = store.load(str(user.pk), "")
    doc.facts = [Fact(id="a", content="Owns a sailboat", confidence=0.95), Fact(id="b", content="Drinks coffee", confidence=0.9),
                 Fact(id="c", content="Lives in Porto", confidence=0.6), Fact(id="d", content="Likes jazz", confidence=0.8)]
    store.save(doc)

    def listed():
        block = memory_context(owner_id=user.pk, agent="", query="sailboat", max_tokens=2000).text
        return [line.split("] ", 1)[1] for line in block.splitlines() if line.startswith("- [")]

    assert listed() == ["Owns a sailboat", "Drinks coffee", "Likes jazz", "Lives in Porto"]
    # The relevant fact is also the most confident: it takes none of the others' places.
    monkeypatch.setattr(selectors, "CANDIDATE_LIMIT", 2)
    assert listed() == ["Owns a sailboat", "Drinks coffee", "Likes jazz"]
