"""The durable event journal (RunEvent rows) and its message projection.

``seq`` is thread-global and allocated as max+1 inside the write transaction. Only one run
per thread is active (uq_runs_thread_active) and a worker writes its last events before it
releases the thread, so allocations do not race in practice; the unique constraint turns a
race that does happen into a retry rather than a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from apps.runs.models import RunEvent


@dataclass(frozen=True)
class JournalEvent:
    event_type: str
    category: str
    content: Any
    metadata: dict


def journal_append(*, thread_id: str, run_id: str, events: list[JournalEvent]) -> list[int]:
    if not events:
        return []
    for attempt in range(5):
        try:
            with transaction.atomic():
                return journal_insert(thread_id=thread_id, run_id=run_id, events=events)
        except IntegrityError:
            if attempt == 4:
                raise
    return []


def journal_insert(*, thread_id: str, run_id: str, events: list[JournalEvent]) -> list[int]:
    """The rows for ``events`` after the thread's last ``seq``, inside the caller's transaction;
    the caller retries the transaction on IntegrityError (a lost allocation race)."""
    if not events:
        return []
    last = RunEvent.objects.filter(thread_id=thread_id).aggregate(m=Max("seq"))["m"] or 0
    rows = [
        RunEvent(thread_id=thread_id, run_id=run_id, seq=last + i + 1, event_type=e.event_type[:32],
                 category=e.category[:16], content=e.content, metadata=e.metadata)
        for i, e in enumerate(events)
    ]
    RunEvent.objects.bulk_create(rows)
    return [r.seq for r in rows]


def event_record(event: RunEvent) -> dict:
    return {
        "thread_id": event.thread_id,
        "run_id": str(event.run_id),
        "seq": event.seq,
        "event_type": event.event_type,
        "category": event.category,
        "content": event.content,
        "metadata": event.metadata,
        "created_at": event.created_at.isoformat(),
    }
