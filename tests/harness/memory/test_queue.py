"""The debounced queue: which jobs go to the updater together, and its stop (what a process
about to exit gets done, and what it gets back)."""

from __future__ import annotations

import threading
import time

from harness.memory.queue import DebouncedQueue
from harness.memory.updater import UpdateJob
from tests.support.waiting import HANG_SECONDS


def job(thread_id: str, run_id: str = "r", owner: str = "7", agent: str = "", text: str = "") -> UpdateJob:
    messages = [{"role": "user", "content": text, "id": f"m-{thread_id}"}] if text else []
    return UpdateJob(owner=owner, agent=agent, thread_id=thread_id, run_id=run_id, messages=messages)


def test_one_memorys_jobs_due_together_are_one_batch_and_other_memories_their_own():
    batches = []
    queue = DebouncedQueue(batches.append, delay=3600)  # never due on its own: flush decides
    for thread in ("t1", "t2", "t3"):
        queue.add(job(thread))
    queue.add(job("t4", agent="helpdesk"))  # the same user's agent keeps a memory of its own
    queue.add(job("t5", owner="8"))
    assert queue.flush(timeout=HANG_SECONDS)
    assert sorted(sorted(j.thread_id for j in batch) for batch in batches) == [["t1", "t2", "t3"], ["t4"], ["t5"]]


def test_a_batch_holds_at_most_its_characters_of_conversation_and_the_rest_follows():
    batches = []
    queue = DebouncedQueue(batches.append, delay=3600, max_batch_chars=25)
    for thread in ("t1", "t2", "t3"):
        queue.add(job(thread, text="ten chars."))
    queue.add(job("big", text="x" * 40))  # over the limit alone: a batch of its own
    assert queue.flush(timeout=HANG_SECONDS)
    assert sorted(sorted(j.thread_id for j in batch) for batch in batches) == [["big"], ["t1", "t2"], ["t3"]]


def test_stop_processes_everything_pending_at_once_and_hands_back_nothing():
    seen = []
    queue = DebouncedQueue(seen.extend, delay=3600)
    queue.add(job("t1"))
    queue.add(job("t2"))
    assert queue.stop(timeout=HANG_SECONDS) == []
    assert sorted(j.thread_id for j in seen) == ["t1", "t2"] and queue.pending() == 0


def test_stop_hands_back_what_it_could_not_finish_in_time_and_then_takes_no_more():
    release, started, seen = threading.Event(), threading.Event(), []

    def slow(batch):
        started.set()
        release.wait(HANG_SECONDS)  # released only after stop returned: a stop that waited for it would hang
        seen.append(batch)

    queue = DebouncedQueue(slow, delay=3600)
    queue.add(job("t1"), delay=0)
    assert started.wait(HANG_SECONDS)
    queue.add(job("t2"))
    left = queue.stop(timeout=0.3)
    # the one in progress (its process is about to end under it) and the one never taken
    assert sorted(j.thread_id for j in left) == ["t1", "t2"]
    release.set()
    deadline = time.monotonic() + HANG_SECONDS
    while queue.pending() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(seen) == 1  # the one in progress finished; the other was never taken


def test_a_job_added_while_the_queue_stops_is_due_at_once():
    # t1 is taken only once the stop has begun (its debounce is an hour), and stays in progress
    # until t2 is added: a 0.2 s pause there let a busy machine finish t1 and the stop first.
    first_taken, second_added, seen = threading.Event(), threading.Event(), []
    queue = DebouncedQueue(lambda batch: (seen.extend(batch), first_taken.set(), second_added.wait(HANG_SECONDS)), delay=3600)
    queue.add(job("t1"))
    left: list[UpdateJob] = []
    stopping = threading.Thread(target=lambda: left.extend(queue.stop(timeout=HANG_SECONDS)))
    stopping.start()
    assert first_taken.wait(HANG_SECONDS)
    queue.add(job("t2"))  # a run that finished during the stop
    second_added.set()
    stopping.join(HANG_SECONDS)
    assert left == [] and [j.thread_id for j in seen] == ["t1", "t2"]


def test_stop_with_no_time_hands_everything_back_unprocessed():
    seen = []
    queue = DebouncedQueue(seen.extend, delay=3600)
    queue.add(job("t1"))
    assert [j.thread_id for j in queue.stop(timeout=0)] == ["t1"] and seen == []
