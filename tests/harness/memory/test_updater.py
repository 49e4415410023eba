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
from harness.config.app_config import MemoryConfig
from harness.memory.updater import UpdateJob, run_update
from harness.testing import ScriptedChatModel

JOB = UpdateJob(owner="7", agent="", thread_id="t1", run_id="r1",
                messages=[{"role": "user", "content": "I am a data engineer in Lisbon", "id": "m1"},
                          {"role": "assistant", "content": "Nice to meet you", "id": "m2"}])


def reply(**data) -> ScriptedChatModel:
    return ScriptedChatModel(script=[json.dumps(data)])


def update(store, model, job=JOB, threshold=0.7, max_facts=100, **knobs):
    return run_update(store, model, job, MemoryConfig(fact_confidence_threshold=threshold, max_facts=max_facts, **knobs))


def prompt(model) -> str:
    """What the updater model was shown: its instructions and the request body."""
    return "\n".join(str(m.content) for m in model.requests[0].messages)


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


def learned(fid, content, days_ago, **kw):
    at = now() - dt.timedelta(days=days_ago)
    return Fact(id=fid, content=content, created_at=at, last_confirmed_at=at, **kw)


def test_staleness_review_fires_for_due_facts_and_keeps_to_its_caps(store):
    seed(store, *[learned(f"s{i}", f"Works on project {i}", 100, confidence=0.7 + i / 100) for i in range(4)],
         learned("c", "Do not call me Annie", 400, category="correction"),
         learned("u", "Allergic to nuts", 400, source_kind="user"),
         learned("f", "Learns Rust", 10))
    model = reply(staleReview=[{"id": i, "action": "remove"} for i in ("s0", "s1", "s2", "s3", "c", "u", "f")])
    update(store, model, staleness_max_removals_per_cycle=2)
    shown = prompt(model)
    assert "Facts due for review" in shown and all(f"Works on project {i}" in shown.split("Facts due for review")[1] for i in range(4))
    due_part = shown.split("Facts due for review")[1].split("New conversation")[0]
    assert "Do not call me Annie" not in due_part and "Allergic to nuts" not in due_part and "Learns Rust" not in due_part
    ids = {f.id for f in store.load("7").facts}
    # Two removals per cycle, the least confident first; protected, owner and fresh facts stay.
    assert ids == {"s2", "s3", "c", "u", "f"}


def test_staleness_review_does_not_fire_when_off_too_few_or_not_old_enough(store):
    seed(store, *[learned(f"s{i}", f"Works on project {i}", 45) for i in range(3)])
    removal = {"staleReview": [{"id": f"s{i}", "action": "remove"} for i in range(3)]}

    for knobs in ({"staleness_review_enabled": False, "staleness_age_days": 30},   # switched off
                  {"staleness_age_days": 30, "staleness_min_candidates": 4},       # three due, four needed
                  {"staleness_age_days": 60}):                                      # 45 days old is not due yet
        model = reply(**removal)
        update(store, model, **knobs)
        assert "due for review" not in prompt(model)
        assert len(store.load("7").facts) == 3, knobs

    model = reply(**removal)
    update(store, model, staleness_age_days=30)  # now it fires
    assert "due for review" in prompt(model) and store.load("7").facts == []


def test_extend_and_keep_are_bounded_by_the_lifetime_knobs(store):
    seed(store, learned("a", "Uses Django", 200), learned("b", "Lives in Porto", 200), learned("c", "Plays chess", 200))
    update(store, reply(staleReview=[{"id": "a", "action": "extend", "validDays": 5000}, {"id": "b", "action": "keep"}],
                        newFacts=[{"content": "Trains for a marathon", "confidence": 0.9, "validDays": 10000}]),
           staleness_min_candidates=1, staleness_max_extension_days=365, staleness_age_days=30, staleness_max_lifetime_multiplier=2)
    doc = store.load("7")
    a, b, c = doc.fact("a"), doc.fact("b"), doc.fact("c")
    # Extended: at most staleness_max_extension_days after it was learned (200 days ago).
    assert a.valid_until <= a.created_at + dt.timedelta(days=365) and a.valid_until > now() + dt.timedelta(days=150)
    assert b.valid_until is None and b.last_confirmed_at > now() - dt.timedelta(minutes=5)  # kept: due again in 30 days
    assert c.last_confirmed_at < now() - dt.timedelta(days=100)  # not reviewed: unchanged
    new = next(f for f in doc.facts if f.content == "Trains for a marathon")
    assert new.valid_until <= now() + dt.timedelta(days=60)  # created at most 30 x 2 days valid


def _category_facts():
    prefs = [learned(f"p{i}", f"Likes dish {i}", 5, category="preference", confidence=0.8) for i in range(4)]
    known = [learned(f"k{i}", f"Knows language {i}", 5, category="knowledge", confidence=0.9) for i in range(2)]
    return prefs, known


def test_consolidation_is_off_unless_turned_on(store):
    prefs, known = _category_facts()
    seed(store, *prefs, *known)
    model = reply(merges=[{"sources": ["p0", "p1"], "content": "Likes dishes 0 and 1", "confidence": 0.8}])
    update(store, model, consolidation_min_facts=3)
    assert "Groups to consolidate" not in prompt(model) and "merges" not in prompt(model)
    assert len(store.load("7").facts) == 6


def test_consolidation_merges_only_within_shown_groups_and_caps(store):
    prefs, known = _category_facts()
    seed(store, *prefs, *known, Fact(id="u", content="Likes tea", category="preference", source_kind="user"))
    model = reply(merges=[
        {"sources": ["k0", "k1"], "content": "Knows two languages", "confidence": 0.9},      # group too small: not shown
        {"sources": ["p0", "u"], "content": "Likes dish 0 and tea", "confidence": 0.8},       # the owner's fact
        {"sources": ["p0", "p1", "p2", "p3"], "content": "Likes four dishes", "confidence": 0.8},  # over max_sources
        {"sources": ["p0", "p1"], "content": "Likes dishes 0 and 1", "confidence": 0.99},
        {"sources": ["p2", "p3"], "content": "Likes dishes 2 and 3", "confidence": 0.8},      # past max_groups
    ])
    update(store, model, consolidation_enabled=True, consolidation_min_facts=3, consolidation_max_sources=3,
           consolidation_max_groups_per_cycle=1)
    shown = prompt(model).split("Groups to consolidate")[1].split("New conversation")[0]
    assert "Likes dish 0" in shown and "Knows language 0" not in shown and "Likes tea" not in shown
    assert sum(f"Likes dish {i}" in shown for i in range(4)) == 3  # consolidation_max_sources facts per group
    contents = sorted(f.content for f in store.load("7").facts)
    assert contents == ["Knows language 0", "Knows language 1", "Likes dish 2", "Likes dish 3", "Likes dishes 0 and 1", "Likes tea"]
    merged = next(f for f in store.load("7").facts if f.content == "Likes dishes 0 and 1")
    assert merged.confidence == 0.8 and merged.category == "preference"  # never raised by a merge


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
    queue = DebouncedQueue(seen.extend, delay=3600)  # never due on its own: flush decides
    for n in range(3):
        queue.add(UpdateJob(owner="7", agent="", thread_id="t1", run_id=f"r{n}", messages=[]))
    queue.add(UpdateJob(owner="7", agent="", thread_id="t2", run_id="x", messages=[]))
    assert queue.pending() == 2 and seen == []
    assert queue.flush(timeout=10)
    assert sorted(j.run_id for j in seen) == ["r2", "x"]


def test_one_users_threads_are_learned_from_in_one_call_with_each_fact_traced_to_its_thread(store):
    second = UpdateJob(owner="7", agent="", thread_id="t2", run_id="r2",
                       messages=[{"role": "user", "content": "My cat is called Miso", "id": "m3"},
                                 {"role": "assistant", "content": "A fine name", "id": "m4"}])
    model = reply(user={"workContext": "Data engineer"},
                  newFacts=[{"content": "Works as a data engineer", "confidence": 0.9, "messageId": "m1"},
                            {"content": "Has a cat named Miso", "confidence": 0.9, "messageId": "m3"},
                            {"content": "Lives in Lisbon", "confidence": 0.9}])
    outcome = update(store, model, job=[JOB, second])
    assert len(model.requests) == 1 and len(outcome.added) == 3
    body = model.requests[0].messages[-1].content
    assert "[thread t1]" in body and "I am a data engineer in Lisbon" in body
    assert "[thread t2]" in body and "My cat is called Miso" in body
    sources = {f.content: (f.source_thread_id, f.source_run_id, f.source_message_id) for f in store.load("7").facts}
    assert sources == {"Works as a data engineer": ("t1", "r1", "m1"), "Has a cat named Miso": ("t2", "r2", "m3"),
                       # no message named: the latest conversation's last user message
                       "Lives in Lisbon": ("t2", "r2", "m3")}


def test_a_batch_is_one_users_and_agents_only(store):
    with pytest.raises(ValueError):
        update(store, reply(), job=[JOB, UpdateJob(owner="8", agent="", thread_id="t2", run_id="r2", messages=JOB.messages)])
    with pytest.raises(ValueError):
        update(store, reply(), job=[JOB, UpdateJob(owner="7", agent="helpdesk", thread_id="t2", run_id="r2", messages=JOB.messages)])
