"""The in-process debounced update queue (the embedded stack; Celery does this otherwise).

Each thread has at most one pending job: a new run on the thread replaces it (its job
holds the whole conversation so far) and pushes its due time back by the delay, so a
busy conversation costs one model call once it goes quiet. When a job is due, the other
pending jobs for the same memory (owner and agent) go with it, up to ``MAX_BATCH_CHARS`` of
conversation: one user's many threads finishing together are one load, one model call and one
save, not one each. One daemon thread processes due batches; the model call and the store's
IO never touch an event loop.

A process about to exit calls ``stop``: everything pending is due at once, and what is not
done within its bound is handed back for the caller to keep.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from harness.memory.updater import MAX_BATCH_CHARS, UpdateJob

logger = logging.getLogger(__name__)


class DebouncedQueue:
    """*process* is called with a batch: one or more jobs of one owner and agent, in the
    order their due times came."""

    def __init__(self, process: Callable[[list[UpdateJob]], object], delay: float, *,
                 max_batch_chars: int = MAX_BATCH_CHARS) -> None:
        self.process = process
        self.delay = delay
        self.max_batch_chars = max_batch_chars
        self._pending: dict[tuple, tuple[float, UpdateJob]] = {}
        # Taken by the thread and not yet done.
        self._running: list[UpdateJob] = []
        # A stop is under way: every job, and any added meanwhile, is due at once.
        self._draining = False
        # Stopped: no job is taken any more.
        self._stopped = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, job: UpdateJob, *, delay: float | None = None) -> None:
        """Queue ``job`` (replacing its thread's pending one), due after ``delay`` seconds
        (the queue's debounce when None)."""
        with self._cond:
            wait = 0.0 if self._draining else (self.delay if delay is None else delay)
            self._pending[job.key] = (time.monotonic() + wait, job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="memory-updater", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._pending) + len(self._running)

    def flush(self, timeout: float | None = None) -> bool:
        """Make every pending job due now and wait until all are processed (tests)."""
        with self._cond:
            self._pending = {k: (0.0, job) for k, (_, job) in self._pending.items()}
            self._cond.notify_all()
            return self._cond.wait_for(lambda: not self._pending and not self._running, timeout)

    def stop(self, timeout: float) -> list[UpdateJob]:
        """For a process about to exit: process every pending job now, and any added meanwhile,
        for at most ``timeout`` seconds, then take no more. Returns the jobs not done: those
        still pending, and those in progress, whose process is about to end under them (one
        may still finish before it does: kept and applied again, its facts are confirmed, not
        duplicated)."""
        with self._cond:
            self._draining = True
            self._pending = {k: (0.0, job) for k, (_, job) in self._pending.items()}
            self._cond.notify_all()
            # Not ``wait_for``: with no time left it still waits once for zero seconds, which
            # lets go of the lock, and the updater may take a job in that gap.
            deadline = time.monotonic() + timeout
            while self._pending or self._running:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            self._stopped = True
            left = [job for _, job in self._pending.values()] + list(self._running)
            self._pending.clear()
            return left

    def _take_due(self) -> list[UpdateJob]:
        while True:
            if self._stopped or not self._pending:
                self._cond.wait()
                continue
            key, (due, job) = min(self._pending.items(), key=lambda kv: kv[1][0])
            wait = due - time.monotonic()
            if wait > 0:
                self._cond.wait(wait)
                continue
            # The same memory's other jobs, soonest due first, while the batch has room. Taken
            # before their own time: their threads may have another run, which queues again.
            batch, room = [job], self.max_batch_chars - job.size
            for other_key, (_, other) in sorted(self._pending.items(), key=lambda kv: kv[1][0]):
                if other_key != key and other.memory == job.memory and other.size <= room:
                    batch.append(other)
                    room -= other.size
            for taken in batch:
                del self._pending[taken.key]
            self._running.extend(batch)
            return batch

    def _loop(self) -> None:
        while True:
            with self._cond:
                batch = self._take_due()
            try:
                self.process(batch)
            except Exception:  # one bad update must not stop the queue
                logger.warning("memory update for thread %s failed", ", ".join(j.thread_id for j in batch), exc_info=True)
            finally:
                with self._cond:
                    for job in batch:
                        self._running.remove(job)
                    self._cond.notify_all()
