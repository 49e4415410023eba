"""The journal's one flush timer per loop, on the loop runs use (uvloop)."""

import uvloop

from apps.runs.journal import JournalBuffer, JournalEvent


def test_an_overdue_flush_on_uvloop_lets_other_runs_queue_events():
    # A busy loop makes a buffer's flush overdue before it holds its first event; uvloop then
    # returns a plain Handle (no when()) for the timer, and the next run's first event used
    # to fail its run with AttributeError.
    loop = uvloop.new_event_loop()

    async def scenario():
        first, second = JournalBuffer("t", "r1"), JournalBuffer("t", "r2")
        first._last_flush = second._last_flush = loop.time() - 10
        first.hold(JournalEvent("run.start", "trace", {}, {}))
        second.hold(JournalEvent("run.start", "trace", {}, {}))
        flusher = first._flusher
        assert flusher is second._flusher and flusher.buffers == {first, second} and flusher.timer is not None
        flusher.timer.cancel()  # no database here: the flush itself is tested elsewhere

    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()
