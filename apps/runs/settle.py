"""``run_settle``: the one way a run leaves the active statuses.

The worker finishing a run, a cancel of a run nobody holds and orphan recovery all end here,
so the run's final row, its last journal entries, its thread's status and the features'
``settled`` hooks (``apps.runs.lifecycle``) are written in one transaction, and no path can
forget one of them.
"""

from __future__ import annotations

from typing import Callable, Iterable

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.runs import lifecycle
from apps.runs.journal import JournalEvent, journal_insert
from apps.runs.models import Run
from apps.threads.services import ThreadStatus, thread_status_set, thread_title_set
from deerflow_site.db.prepared_sql import ModelUpdate

_update_run = ModelUpdate(Run)  # the worker's settle, once per run: prepared SQL

# The journal's seq allocation can lose a race with another writer on the thread; the whole
# transaction is then retried, so the journal needs no savepoint of its own.
_ATTEMPTS = 5


def run_settle(*, run_id: str, thread_id: str, status: str, stop_reason: str, thread_status: str, error: str = "",
               columns: dict | None = None, events: Iterable[JournalEvent] | Callable[[], list[JournalEvent]] = (),
               only_if: Q | None = None, thread_only_if_busy: bool = False, title: str | None = None,
               fallback_title: str = "", metadata: dict | None = None) -> bool:
    """Write a run's outcome; False when ``only_if`` no longer matched (someone else settled
    it, or its worker renewed it meanwhile).

    ``events`` may be a callable, evaluated inside the transaction, for entries that depend on
    what the journal already holds. ``metadata`` is the run's, when the caller has it (the
    worker read it at the claim); otherwise it is read when a ``settled`` hook needs it.
    """
    for attempt in range(_ATTEMPTS):
        now = timezone.now()
        written = {"status": status, "stop_reason": stop_reason, "error": error, "finished_at": now,
                   "lease_expires_at": None, "updated_at": now, **(columns or {})}
        try:
            with transaction.atomic():
                # The run's update goes first: its SQL is built before SQLite's write lock is taken.
                if only_if is None:
                    _update_run(run_id, **written)
                elif not Run.objects.filter(only_if, pk=run_id).update(**written):
                    return False
                entries = events() if callable(events) else list(events)
                if entries:
                    journal_insert(thread_id=thread_id, run_id=run_id, events=entries)
                thread_columns = {"title": title[:255]} if title else {}
                thread_status_set(thread_id=thread_id, status=thread_status, now=now, only_if_busy=thread_only_if_busy,
                                  **thread_columns)
                if fallback_title:
                    # A first run stopped before the title middleware spoke: name the chat from
                    # its first message rather than leave an "Untitled chat" behind.
                    thread_title_set(thread_id=thread_id, title=fallback_title, only_if_untitled=True)
                if lifecycle.settled:
                    if metadata is None:
                        metadata = Run.objects.filter(pk=run_id).values_list("metadata", flat=True).first() or {}
                    lifecycle.run_settled(lifecycle.SettledRun(
                        run_id=run_id, thread_id=thread_id, status=status, error=error, stop_reason=stop_reason,
                        finished_at=now, metadata=metadata))
            return True
        except IntegrityError:
            if attempt == _ATTEMPTS - 1:
                raise
    return False


def run_settle_cancelled(*, run_id: str, statuses: tuple[str, ...] = Run.ACTIVE_STATUSES, lease_expired_before=None) -> bool:
    """Finish a cancelled run that never got (or lost) its worker; False if it was not in
    ``statuses`` (already finished, or claimed by a worker meanwhile)."""
    thread_id = Run.objects.filter(pk=run_id).values_list("thread_id", flat=True).first()
    if thread_id is None:
        return False
    only_if = Q(status__in=statuses)
    if lease_expired_before is not None:
        only_if &= Q(lease_expires_at__lt=lease_expired_before) | Q(lease_expires_at__isnull=True)
    return run_settle(run_id=run_id, thread_id=thread_id, status=Run.Status.INTERRUPTED, stop_reason="cancelled",
                      thread_status=ThreadStatus.IDLE, thread_only_if_busy=True, only_if=only_if)
