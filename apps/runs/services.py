"""Run admission, cancellation and recovery: the one path every caller uses.

``start_run`` is called by the HTTP API, the websocket consumer and (later) the scheduler
and IM channels. The database decides who holds a thread: ``uq_runs_thread_active`` lets one
pending/running run exist per thread, so two racing requests cannot both start, whatever
process they run in.
"""

from __future__ import annotations

import copy
from datetime import timedelta
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.errors import Conflict, InvalidRequest, NotFound, ThreadBusy
from apps.runs import graphs, lifecycle
from apps.runs.journal import JournalEvent, journal_insert
from apps.runs.models import Run, RunEvent, VisibilitySwitch
from apps.runs.recovery import recover_orphans
from apps.runs.reservations import busy_detail
from apps.runs.runtime import process_id, get_runtime
from apps.runs.schemas import RunCreate
from apps.runs.settle import run_settle_cancelled
from apps.runs.shutdown import check_admitting
from apps.threads.selectors import thread_get_for_user
from apps.threads.services import ThreadStatus, thread_create, thread_status_set
from deerflow_site.db.prepared_sql import ModelInsert
from harness.config.loader import get_app_config
from harness.observability.context import current_request_id, new_request_id, request_id_var, trace_id_var, traceparent_var
from harness.runtime.message_seq import strip_message_seq

logger = logging.getLogger(__name__)

# How long interrupt/rollback waits for the run it replaces to let go of the thread.
REPLACE_WAIT_SECONDS = 30


@dataclass(frozen=True)
class AdmittedRun:
    run: Run
    thread: Any  # its Thread row


def _redact(request: RunCreate) -> tuple[dict, dict[str, str]]:
    """(kwargs to store, secrets to hand the worker in memory)."""
    data = request.model_dump(exclude_none=True)
    context = data.get("context") or {}
    secrets = context.pop("secrets", None)
    if secrets is not None and (not isinstance(secrets, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in secrets.items())):
        raise InvalidRequest("context.secrets must be an object of string values")
    stored = copy.deepcopy(data)
    # The journal seq a client read on a message (regenerate and edit send old ones back) is
    # display data of this thread: in a checkpoint it would go wrong on the first branch.
    strip_message_seq((stored.get("input") or {}).get("messages"))
    return stored, dict(secrets or {})


def _requested_model(request: RunCreate) -> str:
    """The model the request names ("" for none); a 422 when config.yaml has no such model."""
    context = request.context or {}
    configurable = (request.config or {}).get("configurable") or {}
    name = context.get("model_name") or configurable.get("model_name")
    if name is None:
        return ""
    names = [m.name for m in get_app_config().models]
    if name not in names:
        raise InvalidRequest(f"context.model_name: unknown model '{name}'; configured: {', '.join(names) or 'none'}")
    return name


def _check_checkpoint(thread, checkpoint_id: str) -> None:
    runtime = get_runtime()

    async def _exists() -> bool:
        saver = await runtime.checkpointer()
        return await saver.aget_tuple(graphs.thread_config(thread.pk, checkpoint_id)) is not None

    if not runtime.call(_exists):
        raise NotFound(f"Checkpoint {checkpoint_id} not found in thread {thread.pk}")


def _has_state(thread) -> bool:
    runtime = get_runtime()

    async def _latest() -> bool:
        saver = await runtime.checkpointer()
        return await saver.aget_tuple(graphs.thread_config(thread.pk)) is not None

    return runtime.call(_latest)


# Admission's insert as prepared SQL (deerflow_site/db/prepared_sql.py).
_insert_run = ModelInsert(Run)


def _insert(thread, user, request: RunCreate, kwargs: dict, model_name: str) -> Run:
    from apps.runs.executors import get_executor

    now = timezone.now()
    executor = get_executor()
    # A run this process starts at once is written running, as the worker's claim would.
    claimed = executor.claims_at_admission
    lease = settings.RUN_LEASE_SECONDS if claimed else executor.pending_lease_seconds
    with transaction.atomic():
        run = _insert_run.create(
            thread=thread, owner=user, assistant_id=request.assistant_id or graphs.LEAD_AGENT,
            status=Run.Status.RUNNING if claimed else Run.Status.PENDING, started_at=now if claimed else None,
            multitask_strategy=request.multitask_strategy,
            kwargs=kwargs, metadata=request.metadata or {}, model_name=model_name,
            # A run started outside a request (a schedule, a channel) gets its own id.
            request_id=current_request_id() or new_request_id(),
            # The request's trace (its traceparent continued), else a trace of the run's own.
            trace_id=trace_id_var.get() or new_request_id(), traceparent=traceparent_var.get() or "",
            lease_owner=process_id(), lease_expires_at=now + timedelta(seconds=lease),
        )
        # The thread talks to the agent of its latest run (the chat shows it); same UPDATE, no extra query.
        thread_status_set(thread_id=thread.pk, status=ThreadStatus.BUSY, now=now, assistant_id=run.assistant_id)
    return run


def start_run(*, user, thread_id: str | None, request: RunCreate, stateless: bool = False) -> AdmittedRun:
    """Admit a run and hand it to the executor; returns once it is pending."""
    check_admitting()  # a server shutting down admits nothing (503 + Retry-After)
    # None for lead_agent (no query); a custom agent's settings in one query, 404 when unknown or not visible.
    agent = lifecycle.agent_for(user, request.assistant_id)
    if stateless:
        configurable = (request.config or {}).get("configurable") or {}
        thread_id = configurable.get("thread_id") or thread_id
        # Another user's id is a NotFound from thread_create, as everywhere: never revealed.
        thread = thread_create(owner=user, thread_id=thread_id, assistant_id=request.assistant_id or graphs.LEAD_AGENT)
    else:
        try:
            thread = thread_get_for_user(user=user, thread_id=thread_id)
        except NotFound:
            if request.if_not_exists != "create":
                raise
            thread = thread_create(owner=user, thread_id=thread_id, assistant_id=request.assistant_id or graphs.LEAD_AGENT)
    requested_model = _requested_model(request)
    model_name = requested_model or (agent or {}).get("model_name") or ""
    lifecycle.admit(lifecycle.Admission(user=user, request=request, requested_model=requested_model))
    if request.command is not None and thread.status != ThreadStatus.INTERRUPTED:
        raise InvalidRequest(f"command.resume: thread {thread.pk} is not waiting for input (status: {thread.status})")
    # The request's own shape first; then what needs the checkpointer.
    kwargs, secrets = _redact(request)
    if agent is not None:
        # The agent as it is now travels with the run (RunCreate forbids a client "agent" key),
        # so the worker, in whatever process, needs no query of its own.
        kwargs["agent"] = agent
    if request.checkpoint_selector:
        _check_checkpoint(thread, request.checkpoint_selector)
    elif request.input is None and request.command is None and not _has_state(thread):
        # LangGraph would admit it and then fail with EmptyInputError: nothing to continue from.
        raise InvalidRequest(f"input: required, thread {thread.pk} has no state to continue from")

    deadline = time.monotonic() + REPLACE_WAIT_SECONDS
    while True:
        try:
            run = _insert(thread, user, request, kwargs, model_name)
            break
        except IntegrityError:
            # Whatever holds the slot: a run, or a thread reservation (apps/runs/reservations.py).
            active = Run.slots.filter(thread=thread, status__in=Run.ACTIVE_STATUSES).first()
            if active is None:
                continue  # it finished between our insert and this read: try again
            if _lease_lapsed(active) and recover_orphans(get_runtime(), run_id=str(active.pk)):
                continue  # its process died, and no sweep had settled it yet: the thread is free
            if active.kind != Run.Kind.RUN:
                # Never interrupted, whatever the strategy: a half-done rewrite of the head
                # would be what the new run starts from.
                raise ThreadBusy(busy_detail(thread.pk, active.kind)) from None
            if request.multitask_strategy == "reject":
                raise ThreadBusy(f"Thread {thread.pk} already has an active run") from None
            if time.monotonic() > deadline:
                raise ThreadBusy(f"Thread {thread.pk} is still busy: run {active.pk} did not stop in time") from None
            run_cancel(run=active, action=request.multitask_strategy, wait=True)

    runtime = get_runtime()
    if secrets:
        runtime.secrets[str(run.pk)] = secrets
    from apps.runs.executors import get_executor

    executor = get_executor()
    executor.prepare(str(run.pk))
    # Subscribers may attach before the worker starts: the metadata event is already there.
    runtime.bridge.publish(str(run.pk), "metadata", {"run_id": str(run.pk), "thread_id": thread.pk})
    transaction.on_commit(lambda: _submit(executor, run))
    thread.status = ThreadStatus.BUSY  # as _insert wrote it; saves a read
    return AdmittedRun(run=run, thread=thread)


def start_run_in_new_thread(*, user, thread_id: str, request: RunCreate, metadata: dict | None) -> AdmittedRun:
    """A new chat's first message (the websocket's ``run`` with ``thread``): the thread, named
    by the client, and its first run in one transaction, so a refused run leaves no thread
    behind. A thread that is already the caller's just gets the run (``metadata`` is not
    applied, as a repeated ``POST /threads`` would not); another user's id is NotFound, as a
    missing one is everywhere else."""
    try:
        thread_get_for_user(user=user, thread_id=thread_id)
    except NotFound:
        pass
    else:
        # Outside the transaction: admission may wait for an active run to stop, which must
        # not hold the database's write lock meanwhile.
        return start_run(user=user, thread_id=thread_id, request=request)
    with transaction.atomic():
        thread_create(owner=user, thread_id=thread_id, assistant_id=request.assistant_id or graphs.LEAD_AGENT, metadata=metadata)
        return start_run(user=user, thread_id=thread_id, request=request)


def _submit(executor, run: Run) -> None:
    # The run's request id, bound for the hand-off: a Celery executor sends it along, and a
    # run admitted outside any request (a schedule) still hands over the id it was given.
    token = request_id_var.set(run.request_id)
    try:
        if run.status == Run.Status.RUNNING:  # admitted running: the worker skips its claim
            executor.submit(str(run.pk), claimed=claimed_meta(run))
        else:
            executor.submit(str(run.pk))
    finally:
        request_id_var.reset(token)


def claimed_meta(run: Run) -> dict:
    """What the worker's claim reads from the row, from the row just inserted; kwargs are
    copied, so the worker and the response serializer never share them."""
    return {"thread_id": run.thread_id, "owner_id": run.owner_id, "kwargs": copy.deepcopy(run.kwargs),
            "assistant_id": run.assistant_id, "model_name": run.model_name, "metadata": run.metadata,
            "request_id": run.request_id, "trace_id": run.trace_id, "traceparent": run.traceparent, "created_at": run.created_at}


def run_cancel(*, run: Run, action: str = "interrupt", wait: bool = False, timeout: float = REPLACE_WAIT_SECONDS) -> Run:
    """Cancel a run wherever it is: executing here, executing in another process, queued, or
    orphaned by a process that died."""
    if action not in ("interrupt", "rollback"):
        raise InvalidRequest("action must be 'interrupt' or 'rollback'")
    run.refresh_from_db()
    if not run.is_active:
        raise Conflict(f"Run {run.pk} is not cancellable (status: {run.status})")
    # The flag comes first: a worker claiming the run or renewing its lease acts on it even
    # when the signal below does not reach it.
    Run.objects.filter(pk=run.pk).update(cancel_requested_at=timezone.now(), cancel_action=action)
    run_id = str(run.pk)
    runtime = get_runtime()
    if runtime.cancel(run_id, action):
        if wait:
            runtime.call(runtime.wait_done, run_id, timeout, timeout=timeout + 5)
    elif run_settle_cancelled(run_id=run_id, statuses=(Run.Status.PENDING,)) or _settle_if_orphaned(run_id):
        # Nobody had started it (its claim will now fail), or its process is gone.
        _end_stream(run_id)
    else:
        # Running in another process (a Celery worker, another server): ask it to stop.
        runtime.broadcast_cancel(run_id, action)
        if wait:
            _wait_until_finished(run_id, timeout)
    run.refresh_from_db()
    return run


def _end_stream(run_id: str) -> None:
    try:
        get_runtime().bridge.end(run_id)
    except RuntimeError:  # already ended (by the worker, or by another process)
        pass


def _settle_if_orphaned(run_id: str) -> bool:
    """Settle a running run whose lease has lapsed: its process stopped renewing it."""
    return run_settle_cancelled(run_id=run_id, lease_expired_before=timezone.now())


def _wait_until_finished(run_id: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Run.objects.filter(pk=run_id, status__in=Run.ACTIVE_STATUSES).exists():
            return
        time.sleep(0.05)


def _lease_lapsed(run: Run) -> bool:
    return run.lease_expires_at is None or run.lease_expires_at < timezone.now()


def runs_recover_orphans() -> int:
    """Mark runs whose executing process is gone (lease expired) as errors, journal what their
    checkpoint holds, free their threads (see ``recovery``); the number settled."""
    return len(recover_orphans(get_runtime()))


def run_delete(*, run: Run) -> None:
    if run.is_active:
        raise Conflict(f"Run {run.pk} is still active; cancel it first")
    run.delete()


def run_usage_add(*, run_id: str, model_name: str, counts: dict, kind: str = "memory") -> None:
    """Add model usage spent for a run after it finished (a memory update learning from it) to
    that run, so budgets, which sum the user's runs, count it. ``counts`` as
    ``harness.agents.middlewares.token_usage.usage_counts`` gives them. The run's totals and
    per-model usage grow; ``<kind>_tokens`` says how much of it was that work."""
    name = model_name or kind
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).only("token_usage").first()
        if run is None:
            return
        token_usage = dict(run.token_usage or {})
        by_model = dict(token_usage.get("by_model") or {})
        entry = dict(by_model.get(name) or {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "total_tokens": 0, "calls": 0})
        for key, value in (("input_tokens", counts["input_tokens"]), ("output_tokens", counts["output_tokens"]),
                           ("cache_read_tokens", counts["cache_read"]), ("total_tokens", counts["total_tokens"]), ("calls", 1)):
            entry[key] = int(entry.get(key) or 0) + value
        by_model[name] = entry
        token_usage["by_model"] = by_model
        token_usage[f"{kind}_tokens"] = int(token_usage.get(f"{kind}_tokens") or 0) + counts["total_tokens"]
        Run.objects.filter(pk=run_id).update(token_usage=token_usage, input_tokens=F("input_tokens") + counts["input_tokens"],
                                             output_tokens=F("output_tokens") + counts["output_tokens"],
                                             cache_read_tokens=F("cache_read_tokens") + counts["cache_read"])


def runs_seed_copy(*, thread, source_runs: list[Run]) -> int:
    """Give a branch one finished run per turn it inherits, with that turn's message rows, so
    its history reads like the source's; the journal rows written. Inside the caller's
    transaction (the branch's row is created in it)."""
    rows = 0
    for source in source_runs:
        seed = Run.objects.create(
            thread=thread, owner_id=thread.owner_id, assistant_id=source.assistant_id, status=Run.Status.SUCCESS,
            kwargs=source.kwargs, model_name=source.model_name, finished_at=source.finished_at,
            metadata={"branch_seed": {"source_thread_id": source.thread_id, "source_run_id": str(source.pk)}},
        )
        events = [JournalEvent(e.event_type, e.category, e.content, e.metadata)
                  for e in RunEvent.objects.filter(run=source, category="message").order_by("seq")]
        rows += len(journal_insert(thread_id=thread.pk, run_id=str(seed.pk), events=events))
    return rows


def visibility_switch_record(*, thread_id: str, shown_run_id: str, hidden_run_ids: set[str], shown_run_ids: set[str]):
    """Store a switch between answer versions (``visibility.switch_plan`` says what it changes)."""
    return VisibilitySwitch.objects.create(thread_id=thread_id, shown_run_id=shown_run_id,
                                           hidden_run_ids=sorted(hidden_run_ids), shown_run_ids=sorted(shown_run_ids))


def visibility_switch_undo(*, switch_id: int) -> None:
    """Take back a switch whose checkpoint could not be written (nothing stays half done)."""
    VisibilitySwitch.objects.filter(pk=switch_id).delete()
