"""The journal's one flush timer per loop, on the loop runs use (uvloop), and its writes."""

import asyncio

import pytest
import uvloop

from apps.runs.journal import JournalBuffer, JournalEvent


def test_an_overdue_flush_on_uvloop_lets_other_runs_queue_events():
    # A busy loop makes a buffer's flush overdue before it holds its first event; uvloop then
    # returns a plain Handle (no when()) for the timer, and the next run's first event used
    # to fail its run with AttributeError.
    loop = uvloop.new_event_loop()

    async def scenario():
        first, second = JournalBuffer("t", "r1"), JournalBuffer("t", "r2")
        first.FLUSH_SECONDS = second.FLUSH_SECONDS = -10  # due before they hold anything
        first.hold(JournalEvent("run.start", "trace", {}, {}))
        second.hold(JournalEvent("run.start", "trace", {}, {}))
        flusher = first._flusher
        assert flusher is second._flusher and flusher.buffers == {first, second} and flusher.timer is not None
        flusher.timer.cancel()  # no database here: the flush itself is tested elsewhere

    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()


def _runs(user, count):
    from apps.runs.models import Run
    from apps.threads.models import Thread

    runs = []
    for _ in range(count):
        thread = Thread.objects.create(owner=user)
        runs.append((thread.pk, str(Run.objects.create(thread=thread, owner=user, status=Run.Status.RUNNING).pk)))
    return runs


def _journaled(run_id):
    from apps.runs.models import RunEvent

    return list(RunEvent.objects.filter(run_id=run_id).order_by("seq").values_list("event_type", flat=True))


@pytest.mark.django_db(transaction=True)
def test_the_timer_writes_what_every_run_has_due(user):
    runs = _runs(user, 3)
    loop = uvloop.new_event_loop()

    async def scenario():
        buffers = []
        for thread_id, run_id in runs:
            buffer = JournalBuffer(thread_id, run_id)
            buffer.FLUSH_SECONDS = 0.05
            buffer.hold(JournalEvent("run.start", "trace", {"chain": "lead_agent"}, {}))
            buffers.append(buffer)
        deadline = loop.time() + 10
        while any(b.pending or b._writing for b in buffers) and loop.time() < deadline:
            await asyncio.sleep(0.02)

    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert [_journaled(run_id) for _, run_id in runs] == [["run.start"]] * 3


@pytest.mark.django_db(transaction=True)
def test_one_run_whose_rows_cannot_be_written_holds_back_no_other(user):
    from apps.runs.journal import journal_append_many

    runs = _runs(user, 2)
    event = JournalEvent("llm.human.input", "message", {"content": "hi"}, {})
    # The middle one names a thread that does not exist: its rows break the foreign key.
    errors = journal_append_many([(runs[0][0], runs[0][1], [event]), ("no-such-thread", runs[1][1], [event]),
                                  (runs[1][0], runs[1][1], [event])])
    assert errors[0] is None and errors[1] is not None and errors[2] is None
    assert _journaled(runs[0][1]) == ["llm.human.input"] and _journaled(runs[1][1]) == ["llm.human.input"]
