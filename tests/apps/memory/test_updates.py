"""What a run queues, and the Celery path's dedup (only a thread's latest job works)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from apps.memory import learning, updates
from apps.memory.stores import DjangoMemoryStore
from harness.agents.markers import hidden_message
from harness.testing import ScriptedChatModel
from tests.apps.memory import conftest as mem

pytestmark = [pytest.mark.django_db]


def test_a_run_queues_user_messages_and_final_answers_only(user):
    values = {"messages": [
        hidden_message("uploads", "files: a.txt"),
        HumanMessage(content="I live in Porto", id="u1"),
        AIMessage(content="", id="a1", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
        ToolMessage(content="listing", tool_call_id="c1", id="t1"),
        AIMessage(content="Nice city.", id="a2"),
    ]}
    job = updates.job_from_run(meta={"owner_id": user.pk, "thread_id": "th"}, run_id="r", context={"agent_name": "captain"}, values=values)
    assert [(m["role"], m["id"]) for m in job.messages] == [("user", "u1"), ("assistant", "a2")]
    assert (job.owner, job.agent, job.thread_id) == (str(user.pk), "captain", "th")


@pytest.mark.django_db(transaction=True)  # the task closes its connections as a worker does
def test_on_celery_only_the_latest_job_of_a_thread_works(user, memory_on, settings):
    from django.core.cache import cache

    from apps.memory.tasks import update_memory

    settings.RUN_EXECUTOR = "celery"
    model = mem.set_updater(json.dumps({"newFacts": [{"content": "Lives in Porto", "confidence": 0.9}]}))
    job = updates.UpdateJob(owner=str(user.pk), agent="", thread_id="th", run_id="r",
                            messages=[{"role": "user", "content": "I live in Porto", "id": "u1"}])
    cache.set("memory-job:th", "newer")
    learning.process_if_latest(asdict(job), "older")  # replaced by a later run: nothing to do
    assert model.requests == []

    eager = update_memory.app.conf.task_always_eager
    update_memory.app.conf.task_always_eager = True
    try:
        updates.enqueue(job)
    finally:
        update_memory.app.conf.task_always_eager = eager
    assert len(model.requests) == 1
    assert [f.content for f in DjangoMemoryStore().load(str(user.pk)).facts] == ["Lives in Porto"]


@pytest.mark.django_db(transaction=True)  # the updater works on its own thread and connection
def test_a_stop_saves_what_it_cannot_apply_and_the_next_start_applies_it_once(user, memory_on):
    import yaml

    from apps.memory.models import PendingMemoryUpdate

    cfg = yaml.safe_load(memory_on.read_text())
    cfg["memory"]["shutdown_flush_timeout_seconds"] = 0  # no time at all: everything is saved
    memory_on.write_text(yaml.safe_dump(cfg))
    model = mem.set_updater(json.dumps({"newFacts": [{"content": "Lives in Porto", "confidence": 0.9}]}))
    job = updates.UpdateJob(owner=str(user.pk), agent="", thread_id="th", run_id="r",
                            messages=[{"role": "user", "content": "I live in Porto", "id": "u1"}])
    updates.enqueue(job)

    assert updates.stop_updates() == [job]
    assert model.requests == []
    assert [(r.owner_id, r.thread_id, r.job) for r in PendingMemoryUpdate.objects.all()] == [(user.pk, "th", asdict(job))]

    updates._queue = None  # the next start of the process
    assert updates.resume_saved_updates() == 1
    assert updates.get_queue().flush(timeout=30)
    assert len(model.requests) == 1
    assert [f.content for f in DjangoMemoryStore().load(str(user.pk)).facts] == ["Lives in Porto"]
    assert not PendingMemoryUpdate.objects.exists() and updates.resume_saved_updates() == 0


@pytest.mark.django_db(transaction=True)
def test_saved_updates_wait_while_memory_is_off(user, memory_on):
    import yaml

    from apps.memory.models import PendingMemoryUpdate

    PendingMemoryUpdate.objects.create(owner=user, thread_id="th", job=asdict(updates.UpdateJob(
        owner=str(user.pk), agent="", thread_id="th", run_id="r", messages=[{"role": "user", "content": "hi", "id": "u1"}])))
    cfg = yaml.safe_load(memory_on.read_text())
    cfg["memory"]["enabled"] = False
    memory_on.write_text(yaml.safe_dump(cfg))
    assert updates.resume_saved_updates() == 0 and PendingMemoryUpdate.objects.count() == 1


def test_a_process_that_queued_nothing_stops_at_once(memory_on):
    assert updates._queue is None and updates.stop_updates() == []


class CountedModel(ScriptedChatModel):
    """A config.yaml model (``use:``) that notes each construction."""

    def model_post_init(self, context) -> None:
        super().model_post_init(context)
        BUILT.append(self)


BUILT: list[CountedModel] = []


@pytest.mark.django_db(transaction=True)  # process_job closes its connections as the queue's thread does
def test_updates_share_the_config_model_until_the_config_is_reloaded(user, memory_on, settings):
    import yaml

    settings.DEERFLOW_MEMORY_MODEL_FACTORY = ""  # the model from config.yaml, as a user's server builds it
    cfg = yaml.safe_load(memory_on.read_text())
    reply = json.dumps({"user": {"topOfMind": "naming a cat"}, "newFacts": [], "factsToRemove": []})
    cfg["models"] = [{"name": "counted", "use": f"{__name__}:CountedModel", "script": [reply], "loop": True}]
    memory_on.write_text(yaml.safe_dump(cfg))
    BUILT.clear()

    def update(run: str) -> None:
        learning.process_job(updates.UpdateJob(owner=str(user.pk), agent="", thread_id=f"th-{run}", run_id=run,
                                               messages=[{"role": "user", "content": "What is a good name for a cat?", "id": run}]))

    update("r1")
    update("r2")
    assert len(BUILT) == 1 and len(BUILT[0].requests) == 2  # one model served both updates
    assert DjangoMemoryStore().load(str(user.pk)).revision == 2

    cfg["models"][0]["script"] = [json.dumps({"newFacts": [{"content": "Has a cat", "confidence": 0.9}]})]
    memory_on.write_text(yaml.safe_dump(cfg))  # config.yaml edited: the next update builds from the new one
    update("r3")
    assert len(BUILT) == 2 and len(BUILT[1].requests) == 1
    assert [f.content for f in DjangoMemoryStore().load(str(user.pk)).facts] == ["Has a cat"]
