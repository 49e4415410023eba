"""The durable event journal (RunEvent rows), its message projection, and the buffer a run
writes it through.

``seq`` is thread-global and allocated as max+1 inside the write transaction. Only one run
per thread is active (uq_runs_thread_active) and a worker writes its last events before it
releases the thread, so allocations do not race in practice; the unique constraint turns a
race that does happen into a retry rather than a duplicate.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass, field
from typing import Any

from channels.db import DatabaseSyncToAsync
from django.db import IntegrityError, transaction
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from apps.runs.models import RunEvent
from deerflow_site.db.prepared_sql import ModelInsert, ModelMax
from harness.agents.markers import ERROR_FALLBACK_KEY, message_text
from harness.observability import metrics
from harness.runtime import journal_events
from harness.runtime.serialize import to_jsonable

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JournalEvent:
    event_type: str
    category: str
    content: Any
    metadata: dict


def middleware_events(data: Any) -> list[JournalEvent]:
    """A middleware's audit event from the ``custom`` stream (harness/runtime/journal_events.py)
    as a ``middleware:<tag>`` row."""
    parsed = journal_events.as_journal(data)
    if parsed is None:
        return []
    event_type, category, content = parsed
    return [JournalEvent(event_type, category, to_jsonable(content), {"caller": "lead_agent"})]


@dataclass
class RunProgress:
    """What the worker accumulates while streaming."""

    seen_message_ids: set[str] = field(default_factory=set)
    last_values: Any = None
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    llm_calls: int = 0
    message_count: int = 0
    stop_reason: str = ""
    # Why the run's answer is a failure notice instead of an answer (the model errored or
    # answered nothing after the retry): the run then ends as an error, not a success.
    failed_answer: str = ""
    failed_answer_type: str = ""
    subagent_tokens: int = 0
    # Tokens of model calls the run made besides the agent's (the goal evaluator), by kind.
    side_tokens: dict[str, int] = field(default_factory=dict)
    open_tasks: dict[str, str] = field(default_factory=dict)  # subagents started, not ended: task_id -> model
    # The message list last looked at. A run's values events mostly extend the list the event
    # before had, and a list that starts with those same messages has only its tail to journal:
    # each values event scanning a long thread's whole history was a cost that grew per turn.
    scanned: list = field(default_factory=list)
    # Pre-run messages taken as seen without reading their ids; read only when a later list
    # does not start with them (a summary replaced them, say).
    unread_older: list = field(default_factory=list)

    def assume_older(self, messages: list) -> None:
        """These leading messages of the run's first values event are from before the run."""
        self.scanned = self.unread_older = messages

    def add_subagent_usage(self, model: str, usage: dict) -> None:
        """A subagent's summed usage (``calls`` model calls) from its end event."""
        calls = int(usage.get("calls") or 1)
        self.add_usage(model, {"input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens"),
                               "total_tokens": usage.get("total_tokens"), "input_token_details": {"cache_read": usage.get("cache_read")}})
        self.usage[model]["calls"] += calls - 1
        self.llm_calls += calls
        self.subagent_tokens += int(usage.get("total_tokens") or 0)

    def add_side_usage(self, kind: str, model: str, usage: dict) -> None:
        """A model call outside the graph (``kind``: what it was for) counted into the run's usage."""
        self.add_usage(model, usage)
        self.llm_calls += 1
        self.side_tokens[kind] = self.side_tokens.get(kind, 0) + int(usage.get("total_tokens") or 0)

    def add_usage(self, model: str, usage: dict) -> None:
        entry = self.usage.setdefault(model, {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "total_tokens": 0, "calls": 0})
        inp = int(usage.get("input_tokens") or 0)
        out = int(usage.get("output_tokens") or 0)
        cache = int((usage.get("input_token_details") or {}).get("cache_read") or 0)
        entry["input_tokens"] += inp
        entry["output_tokens"] += out
        entry["cache_read_tokens"] += cache
        entry["total_tokens"] += int(usage.get("total_tokens") or inp + out)
        entry["calls"] += 1


def message_id(msg: Any) -> str | None:
    return getattr(msg, "id", None) if isinstance(msg, BaseMessage) else (msg.get("id") if isinstance(msg, dict) else None)


def message_events(messages: list, progress: RunProgress, default_model: str) -> list[JournalEvent]:
    """Journal events for messages not seen before; counts usage once per AI message."""
    done = len(progress.scanned)
    # Compared object by object (identity first, in C): values events share the objects.
    if done > len(messages) or messages[:done] != progress.scanned:
        done = 0
        if progress.unread_older:
            progress.seen_message_ids.update(mid for mid in map(message_id, progress.unread_older) if mid is not None)
            progress.unread_older = []
    progress.scanned = messages
    events = []
    for msg in messages[done:]:
        mid = message_id(msg)
        if mid is None or mid in progress.seen_message_ids or not isinstance(msg, BaseMessage):
            continue
        progress.seen_message_ids.add(mid)
        progress.message_count += 1
        data = to_jsonable(msg)
        if isinstance(msg, HumanMessage):
            events.append(JournalEvent("llm.human.input", "message", data, {"caller": "lead_agent"}))
        elif isinstance(msg, AIMessage):
            usage = dict(msg.usage_metadata or {})
            meta = msg.response_metadata or {}
            # The agent stamps the config.yaml name; the provider's model id is the fallback.
            model = meta.get("deerflow_model") or default_model or meta.get("model_name") or "unknown"
            progress.llm_calls += 1
            if usage:
                progress.add_usage(model, usage)
            if msg.additional_kwargs.get(ERROR_FALLBACK_KEY) and not progress.failed_answer:
                progress.failed_answer = failure_text(msg)
                error = msg.additional_kwargs.get("error")
                progress.failed_answer_type = str((error.get("type") if isinstance(error, dict) else None) or "error_fallback")
            events.append(JournalEvent("llm.ai.response", "message", data,
                                       {"caller": "lead_agent", "usage": usage or None, "latency_ms": None, "llm_call_index": progress.llm_calls, "model_name": model}))
        elif isinstance(msg, ToolMessage):
            metrics.tool_call(msg.name or "", msg.status)
            events.append(JournalEvent("llm.tool.result", "message", data, {}))
    return events


def failure_text(msg: AIMessage) -> str:
    """The run's error for an error-fallback answer: the provider's error when there was one
    (what an operator needs), else the notice the user was shown."""
    error = msg.additional_kwargs.get("error")
    detail = error.get("detail") if isinstance(error, dict) else None
    if isinstance(detail, str) and detail.strip():
        return detail.strip()[:2000]
    return message_text(msg).strip()[:2000] or "The model returned no usable answer."


def journaled_message_ids(*, thread_id: str) -> set[str]:
    """Ids of the thread's messages the journal holds (what ``/messages/page`` can show)."""
    ids = RunEvent.objects.filter(thread_id=thread_id, category="message").values_list("content__id", flat=True)
    return {str(i) for i in ids if i}


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


_last_seq = ModelMax(RunEvent, "seq", "thread")
_insert_events = ModelInsert(RunEvent)


def journal_insert(*, thread_id: str, run_id: str, events: list[JournalEvent]) -> list[int]:
    """The rows for ``events`` after the thread's last ``seq``, inside the caller's transaction;
    the caller retries the transaction on IntegrityError (a lost allocation race)."""
    if not events:
        return []
    last = _last_seq(thread_id) or 0
    rows = [
        RunEvent(thread_id=thread_id, run_id=run_id, seq=last + i + 1, event_type=e.event_type[:32],
                 category=e.category[:16], content=e.content, metadata=e.metadata)
        for i, e in enumerate(events)
    ]
    _insert_events.save(*rows)
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


# -- the buffer a run writes through ------------------------------------------------------


class JournalBuffer:
    """Batches a run's journal writes: an event waits at most FLUSH_SECONDS for its write
    (or until FLUSH_EVENTS are pending), so a crash loses at most that much, and the loop's one
    flush timer writes what every run has due in one transaction. A run that ends within
    FLUSH_SECONDS of its last events writes them with its final row, and writes nothing else.

    Writes of one buffer never overlap: seq is allocated at write time, so two writes in
    flight could commit later events before earlier ones.
    """

    FLUSH_SECONDS = 1.0
    FLUSH_EVENTS = 50

    def __init__(self, thread_id: str, run_id: str):
        self.thread_id = thread_id
        self.run_id = run_id
        self.pending: list[JournalEvent] = []
        self._loop = asyncio.get_running_loop()
        self._pending_since = self._loop.time()
        self._writing: asyncio.Task | None = None
        self._flusher = _flusher(self._loop)

    @property
    def due(self) -> float:
        """When the oldest pending event must be written."""
        return self._pending_since + self.FLUSH_SECONDS

    def hold(self, *events: JournalEvent) -> None:
        """Queue events for the timer's next write at the latest."""
        if not self.pending:
            self._pending_since = self._loop.time()
            self._flusher.watch(self)
        self.pending.extend(events)

    async def add(self, events: list[JournalEvent]) -> None:
        """Queue events; a long burst of them is written at once."""
        self.hold(*events)
        if len(self.pending) >= self.FLUSH_EVENTS:
            await self.flush()

    async def flush(self) -> None:
        """Write what is pending now, after any write in flight."""
        # A loop: the timer may start another write before this task resumes.
        while self._writing is not None:
            await self._landed(self._writing)
        if self.pending:
            await asyncio.shield(_start_writes([self]))

    async def drain(self) -> list[JournalEvent]:
        """What is left for the final write, once any write in flight has landed."""
        while self._writing is not None:
            try:
                await self._landed(self._writing)
            except Exception:  # already logged; its events are pending again
                pass
        events, self.pending = self.pending, []
        return events

    @staticmethod
    async def _landed(task: asyncio.Task) -> None:
        """Wait for a write. A write that is done but whose done callback (which clears
        ``_writing``) has not run yet must yield to the loop: awaiting a done task does not,
        and the caller's loop would spin on the event loop's thread until it did."""
        if task.done():
            await asyncio.sleep(0)
            task.result()
            return
        await asyncio.shield(task)

    def _written(self, events: list[JournalEvent], error: BaseException | None) -> None:
        self._writing = None
        if error is not None:
            # Not lost: they go with the next write, or with the final row.
            self.pending[:0] = events
            self._pending_since = self._loop.time()
            self._flusher.watch(self)
            if not isinstance(error, asyncio.CancelledError):
                logger.warning("Could not journal %d events of run %s (retrying with the next write): %s",
                               len(events), self.run_id, error)


def journal_append_many(batches: list[tuple[str, str, list[JournalEvent]]]) -> list[BaseException | None]:
    """Several runs' events in one transaction; when that fails, each run's alone (with
    ``journal_append``'s retries), so one run whose rows cannot be written (its thread
    deleted) does not hold the others back. Returns each batch's error, or None."""
    if len(batches) > 1:
        try:
            with transaction.atomic():
                for thread_id, run_id, events in batches:
                    journal_insert(thread_id=thread_id, run_id=run_id, events=events)
            return [None] * len(batches)
        except IntegrityError:
            pass  # a lost seq race, or one run's rows refused: each run alone below
    errors: list[BaseException | None] = []
    for thread_id, run_id, events in batches:
        try:
            journal_append(thread_id=thread_id, run_id=run_id, events=events)
            errors.append(None)
        except Exception as exc:
            errors.append(exc)
    return errors


_write_many = DatabaseSyncToAsync(journal_append_many, thread_sensitive=False)


def _start_writes(buffers: list[JournalBuffer]) -> asyncio.Task:
    """One task writing the pending events of ``buffers`` (none with a write in flight)."""
    taken = []
    for buffer in buffers:
        taken.append(buffer.pending)
        buffer.pending = []
    task = asyncio.get_running_loop().create_task(_write_many([(b.thread_id, b.run_id, ev) for b, ev in zip(buffers, taken)]))
    for buffer in buffers:
        buffer._writing = task

    def _done(done: asyncio.Task) -> None:
        if done.cancelled():
            errors: list = [asyncio.CancelledError()] * len(buffers)
        elif done.exception() is not None:
            errors = [done.exception()] * len(buffers)
        else:
            errors = done.result()
        for buffer, events, error in zip(buffers, taken, errors):
            buffer._written(events, error)

    task.add_done_callback(_done)
    return task


class _Flusher:
    """One timer per loop for every buffer holding events: no task or timer per event, and
    one write for all the buffers that are due together."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.buffers: set[JournalBuffer] = set()
        self.timer: asyncio.TimerHandle | None = None
        # Kept here: uvloop's timer handles have no when().
        self.timer_due = 0.0

    def watch(self, buffer: JournalBuffer) -> None:
        self.buffers.add(buffer)
        due = buffer.due
        if self.timer is not None and self.timer_due > due:
            self.timer.cancel()
            self.timer = None
        if self.timer is None:
            self._arm(due)

    def _arm(self, due: float) -> None:
        self.timer_due = due
        self.timer = self.loop.call_at(due, self._fire)

    def _fire(self) -> None:
        self.timer = None
        now = self.loop.time()
        next_due: float | None = None
        ready = []
        for buffer in list(self.buffers):
            if not buffer.pending:
                self.buffers.discard(buffer)  # written meanwhile (or the run finished)
                continue
            if buffer.due <= now:
                if buffer._writing is None:
                    ready.append(buffer)
                due = now + buffer.FLUSH_SECONDS  # look again then, in case that write failed
            else:
                due = buffer.due
            next_due = due if next_due is None else min(next_due, due)
        if ready:
            _start_writes(ready)  # a task of its own, so it is nobody's to cancel
        if next_due is not None:
            self._arm(next_due)


_flushers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Flusher] = weakref.WeakKeyDictionary()


def _flusher(loop: asyncio.AbstractEventLoop) -> _Flusher:
    flusher = _flushers.get(loop)
    if flusher is None:
        flusher = _flushers[loop] = _Flusher(loop)
    return flusher
