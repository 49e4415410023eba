"""Thread reservations: a thread operation that must not overlap a run holds the thread's one
active slot for as long as it works.

Compaction and ``POST /state`` rewrite the checkpoint head, a branch reads the head and the
journal as one moment, an artifact edit rewrites the files a run writes, a delete removes
everything. Each takes ``thread_reserved(...)``: a ``Run`` row of its own kind, status
running, inserted under the same ``uq_runs_thread_active`` index that admits runs. So the
database decides between a run and an operation exactly as between two runs: whichever
inserts first holds the thread, the other is refused with ``ThreadBusy`` (409), in any
process. A reservation is never interrupted: ``interrupt``/``rollback`` runs are refused
too, since stopping a half-done rewrite would leave the head broken.

The row is leased like a run (``lease_owner``, ``lease_expires_at``) and the process's lease
keeper renews it while it is held (``worker.keep_leases_forever``), so when the process dies
mid-operation, recovery deletes the row once its lease lapses (``recovery.recover_orphans``),
at the sweep or at the next admission on the thread, and the thread is free again.
Reservations are deleted when they end: they never appear as runs (``Run.objects`` leaves them
out) and leave no history; the admin lists the live ones under "Thread reservations".
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.errors import NotFound, ThreadBusy
from apps.runs.models import Run, ThreadReservation
from apps.runs.recovery import recover_orphans
from apps.runs.runtime import process_id, get_runtime
from apps.threads.selectors import thread_of_owner

logger = logging.getLogger(__name__)

Kind = Run.Kind

# Inserts tried before giving up on a thread whose holders keep changing under us.
_ATTEMPTS = 20

# What a refused request is told a reservation is doing.
_DOING = {
    Kind.CHECKPOINT_WRITE: "its history is being rewritten (a compaction or a state update)",
    Kind.BRANCH: "a branch is being made from it",
    Kind.ARTIFACT_WRITE: "one of its files is being edited",
    Kind.DELETE: "it is being deleted",
}

# The reservations this process holds, for the lease keeper (which runs on the runs loop,
# while reservations are held by request threads).
_held: set[str] = set()
_held_lock = threading.Lock()


def held_reservations() -> list[str]:
    with _held_lock:
        return list(_held)


def busy_detail(thread_id: str, kind: str) -> str:
    """The 409 detail for a request refused because a reservation holds the thread."""
    doing = _DOING.get(kind, "another operation holds it")
    return f"Thread {thread_id} is busy: {doing}; try again when it has finished"


def _lapsed(row: Run) -> bool:
    return row.lease_expires_at is None or row.lease_expires_at < timezone.now()


def _insert(*, thread_id: str, owner_id, kind: str) -> ThreadReservation:
    now = timezone.now()
    # A savepoint inside a caller's transaction, whose rollback a failed insert must not
    # take down. (Callers hold no transaction: until it commits nobody would see the row.)
    with transaction.atomic():
        return ThreadReservation.objects.create(
            thread_id=thread_id, owner_id=owner_id, kind=kind, status=Run.Status.RUNNING, started_at=now,
            lease_owner=process_id(), lease_expires_at=now + timedelta(seconds=settings.RUN_LEASE_SECONDS))


def _occupant(thread_id: str) -> Run | None:
    return Run.slots.filter(thread_id=thread_id, status__in=Run.ACTIVE_STATUSES).first()


def reservation_take(*, thread, kind: str, run_busy_detail: str | None = None) -> ThreadReservation:
    """Insert the reservation, or raise ``ThreadBusy`` with what holds the thread. A holder
    whose process died (lease lapsed) is recovered first, as admission does for a run."""
    if kind == Kind.RUN or kind not in Kind.values:
        raise ValueError(f"not a reservation kind: {kind!r}")
    for _ in range(_ATTEMPTS):
        try:
            return _insert(thread_id=thread.pk, owner_id=thread.owner_id, kind=kind)
        except IntegrityError:
            holder = _occupant(thread.pk)
            if holder is None:
                if thread_of_owner(thread_id=thread.pk, owner_id=thread.owner_id) is None:  # deleted meanwhile: the foreign key broke
                    raise NotFound(f"Thread {thread.pk} not found") from None
                continue  # it ended between our insert and this read: try again
            if _lapsed(holder) and recover_orphans(get_runtime(), run_id=str(holder.pk)):
                continue
            if holder.kind == Kind.RUN:
                raise ThreadBusy(run_busy_detail or f"Thread {thread.pk} has an active run; try again when it has finished") from None
            raise ThreadBusy(busy_detail(thread.pk, holder.kind)) from None
    # Holders came and went under every attempt: as busy as a thread gets.
    raise ThreadBusy(f"Thread {thread.pk} is busy; try again")


def reservation_release(reservation: ThreadReservation) -> None:
    with _held_lock:
        _held.discard(str(reservation.pk))
    deleted, _ = Run.slots.filter(pk=reservation.pk).delete()
    if not deleted and reservation.kind != Kind.DELETE:  # a delete takes its row with the thread
        logger.warning("Reservation %s (%s on thread %s) was gone at its release: its lease had lapsed and recovery took it",
                       reservation.pk, reservation.kind, reservation.thread_id)


@contextlib.contextmanager
def thread_reserved(*, thread, kind: str, run_busy_detail: str | None = None) -> Iterator[ThreadReservation]:
    """Hold ``thread``'s active slot for the block: no run is admitted on it meanwhile, and
    the block does not start while a run (or another reservation) holds it (``ThreadBusy``,
    with ``run_busy_detail`` when it is a run). Call it outside any transaction."""
    reservation = reservation_take(thread=thread, kind=kind, run_busy_detail=run_busy_detail)
    with _held_lock:
        _held.add(str(reservation.pk))
    try:
        yield reservation
    finally:
        reservation_release(reservation)


def thread_delete_reserved(thread) -> contextlib.AbstractContextManager:
    """The delete guard the threads app holds around a thread's delete (its ``delete_guards``)."""
    return thread_reserved(thread=thread, kind=Kind.DELETE,
                           run_busy_detail=f"Thread {thread.pk} has an active run; cancel it before deleting the thread")
