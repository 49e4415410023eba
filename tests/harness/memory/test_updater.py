"""The passive updater with the scripted model: what the product does with the model's reply."""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading

import pytest

from harness.memory import Fact, FileMemoryStore, MemoryDoc
from harness.memory.queue import DebouncedQueue
from harness.memory.types import now
from harness.memory.updater import MAX_STALE_REVIEWS, UpdateJob, run_update
from harness.testing import ScriptedChatModel

JOB = UpdateJob(owner="7", agent="", thread_id="t1", run_id="r1",
                messages=[{"role": "user", "content": "I am a data engineer in Lisbon", "id": "m1"},
                          {"role": "assistant", "content": "Nice to meet you", "id": "m2"}])


def reply(**data) -> ScriptedChatModel:
    return ScriptedChatModel(script=[json.dumps(data)])


def update(store, model, job=JOB, threshold=0.7, max_facts=100):
    return run_update(store, model, job, threshold=threshold, max_facts=max_facts)


@pytest.fixture
def store(tmp_path):
    return FileMemoryStore(tmp_path)


def seed(store, *facts: Fact) -> None:
    doc = store.load("7")
    doc.facts = list(facts)
    store.save(doc)


def test_new_facts_and_summaries_are_stored_with_provenance(store):
    model = reply(user={"workContext": "Data engineer", "topOfMind": None},
                  newFacts=[{"content": "Works as a data engineer", "category": "context", "confidence": 0.9, "messageId": "m1"}])
    outcome = update(store, model)
    doc = store.load("7")
    assert len(model.requests) == 1  # one model call per update
    assert [f.content for f in doc.facts] == ["Works as a data engineer"]
    fact = doc.facts[0]
    assert (fact.source_thread_id, fact.source_run_id, fact.source_message_id) == ("t1", "r1", "m1")
    assert doc.summaries["work_context"] == "Data engineer" and outcome.added == [fact.id]
    assert "I am a data engineer in Lisbon" in model.requests[0].messages[-1].content


def test_confidence_threshold_and_task_scoped_instructions_are_refused(store, caplog):
    model = reply(newFacts=[
        {"content": "Lives in Lisbon", "confidence": 0.95},
        {"content": "Might like jazz", "confidence": 0.4},
        {"content": "For this report use British spelling", "confidence": 0.99},
        {"content": "Wants bullet points", "confidence": 0.9, "scope": "task"},
    ])
    with caplog.at_level(logging.WARNING, logger="harness.memory.updater"):
        update(store, model)
    assert [f.content for f in store.load("7").facts] == ["Lives in Lisbon"]
    lines = [r for r in caplog.records if "clamped" in r.getMessage()]
    assert len(lines) == 1 and "task-scoped" in lines[0].getMessage() and "threshold" in lines[0].getMessage()


def test_removal_skips_protected_and_unknown_facts(store):
    seed(store, Fact(id="a", content="Uses vim"), Fact(id="b", content="Name is Ana", source_kind="user"))
    update(store, reply(factsToRemove=["a", "b", "nope"]))
    assert [f.id for f in store.load("7").facts] == ["b"]


def test_invalid_json_changes_nothing_with_one_log_line(store, caplog):
    seed(store, Fact(id="a", content="Uses vim"))
    before = store.load("7")
    with caplog.at_level(logging.WARNING, logger="harness.memory.updater"):
        outcome = update(store, ScriptedChatModel(script=["sure! here are the facts: ..."]))
    assert outcome.skipped == "invalid reply"
    assert store.load("7").revision == before.revision
    assert len([r for r in caplog.records if r.name == "harness.memory.updater"]) == 1


def test_staleness_review_with_caps_and_protection(store):
    old = now() - dt.timedelta(days=1)
    aged = [Fact(id=f"s{i}", content=f"Project {i}", valid_until=old) for i in range(MAX_STALE_REVIEWS + 3)]
    protected = Fact(id="p", content="Allergic to nuts", valid_until=old, source_kind="user")
    fresh = Fact(id="f", content="Fresh fact", valid_until=now() + dt.timedelta(days=10))
    seed(store, *aged, protected, fresh)
    reviews = [{"id": "p", "action": "remove"}, {"id": "f", "action": "remove"}]
    reviews += [{"id": f.id, "action": "remove"} for f in aged]
    update(store, reply(staleReview=reviews))
    ids = {f.id for f in store.load("7").facts}
    assert "p" in ids and "f" in ids  # protected and not-yet-aged facts stay
    # The cap counts every review the model sent: two were refused, so MAX - 2 removals happened.
    assert len([i for i in ids if i.startswith("s")]) == len(aged) - (MAX_STALE_REVIEWS - 2)

    update(store, reply(staleReview=[{"id": "s12", "action": "extend", "validDays": 30}]))
    extended = store.load("7").fact("s12")
    assert extended.valid_until > now() + dt.timedelta(days=29)


def test_consolidation_guardrails(store):
    seed(store, Fact(id="a", content="Likes Python", confidence=0.8), Fact(id="b", content="Likes typing", confidence=0.6),
         Fact(id="u", content="Name is Ana", source_kind="user", confidence=1.0))
    update(store, reply(merges=[
        {"sources": ["a", "missing"], "content": "x", "confidence": 0.9},
        {"sources": ["a", "u"], "content": "y", "confidence": 0.9},
        {"sources": ["a", "b"], "content": "Likes typed Python", "confidence": 0.99},
    ]))
    facts = store.load("7").facts
    assert sorted(f.content for f in facts) == ["Likes typed Python", "Name is Ana"]
    merged = next(f for f in facts if f.content == "Likes typed Python")
    assert merged.confidence == 0.6  # never raised by a merge


def test_a_conflicting_save_retries_without_losing_either_write(store):
    seed(store, Fact(id="a", content="Uses vim"))

    class Interleaving(ScriptedChatModel):
        def invoke(self, *args, **kwargs):  # another writer saves while the model is thinking
            doc = store.load("7")
            doc.facts.append(Fact(id="manual", content="Added meanwhile", source_kind="user"))
            store.save(doc)
            return super().invoke(*args, **kwargs)

    update(store, Interleaving(script=[json.dumps({"newFacts": [{"content": "Lives in Porto", "confidence": 0.9}]})]))
    assert sorted(f.content for f in store.load("7").facts) == ["Added meanwhile", "Lives in Porto", "Uses vim"]


def test_concurrent_updates_lose_no_write(store):
    models = [reply(newFacts=[{"content": f"Fact number {i}", "confidence": 0.9}]) for i in range(6)]
    threads = [threading.Thread(target=update, args=(store, m)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.load("7").facts) == 6


def test_paused_memory_is_not_updated(store):
    doc = store.load("7")
    doc.paused = True
    store.save(doc)
    model = reply(newFacts=[{"content": "Lives in Lisbon", "confidence": 0.95}])
    assert update(store, model).skipped == "paused"
    assert model.requests == []


def test_max_facts_evicts_least_confident_conversation_facts(store):
    seed(store, Fact(id="low", content="Low", confidence=0.71), Fact(id="u", content="Mine", source_kind="user", confidence=0.1))
    update(store, reply(newFacts=[{"content": "High", "confidence": 0.9}]), max_facts=2)
    assert sorted(f.id for f in store.load("7").facts if f.content != "High") == ["u"]


def test_queue_debounces_and_deduplicates_per_thread():
    seen = []
    queue = DebouncedQueue(seen.append, delay=3600)  # never due on its own: flush decides
    for n in range(3):
        queue.add(UpdateJob(owner="7", agent="", thread_id="t1", run_id=f"r{n}", messages=[]))
    queue.add(UpdateJob(owner="7", agent="", thread_id="t2", run_id="x", messages=[]))
    assert queue.pending() == 2 and seen == []
    assert queue.flush(timeout=10)
    assert sorted(j.run_id for j in seen) == ["r2", "x"]
