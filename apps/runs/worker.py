"""``execute_run(run_id)``: stream one run's graph, publish wire events, journal, finish.

Runs on the runs loop (see ``runtime.py``). ORM work goes through ``database_sync_to_async``
so the loop never blocks on the database. The order at the end matters: events are
journaled and ``end`` is published before the run row leaves the active statuses, so the
next run on the thread cannot interleave its ``seq`` allocation with ours.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
import logging
import time
from typing import Any

from django.conf import settings
from django.utils import timezone
from langgraph.types import Command

from apps.runs import graphs, lifecycle, run_state
from apps.runs.journal import JournalBuffer, JournalEvent, RunProgress, message_events, middleware_events
from apps.runs.message_seq import SeqStamper
from apps.runs.models import Run
from apps.runs.reservations import held_reservations
from apps.runs.runtime import HANDOFF, process_id, database_sync_to_async, get_runtime
from apps.runs.settle import run_settle, run_settle_cancelled
from apps.runs.subagent_journal import cancelled_ends, subagent_events
from apps.threads.services import ThreadStatus
from harness.agents.middlewares.title import local_title
from harness.config import ConfigError
from harness.observability import metrics
from harness.observability.context import bind_run
from harness.observability.tracing import trace_metadata
from harness.runtime.serialize import to_jsonable

logger = logging.getLogger(__name__)

CANCEL_POLL_SECONDS = 1.0
# Wire event name of each LangGraph stream mode.
WIRE_MODE = {"messages-tuple": "messages"}
GRAPH_MODE = {"messages-tuple": "messages"}
_METADATA_KEEP_PREFIXES = ("langgraph_", "ls_", "run_id", "thread_id", "assistant_id", "tags", "checkpoint_ns")


# -- database steps (each runs in a thread) ----------------------------------------------


def lease_seconds() -> int:
    """A running run's lease (settings.RUN_LEASE_SECONDS); renewed every third of it, so two
    renewals may fail before recovery takes the run for dead."""
    return settings.RUN_LEASE_SECONDS


def _raise_if_cancelled(run_id: str) -> None:
    """asgiref lets the thread finish and may then return its result to a task that was
    cancelled meanwhile, swallowing the cancel. The runtime records every cancel before it
    cancels the task, so after each database call the run checks for one itself."""
    if get_runtime().cancel_action(run_id):
        raise asyncio.CancelledError



@database_sync_to_async
def _claim(run_id: str) -> dict | None:
    """pending -> running; None when the run was cancelled before it started."""
    now = timezone.now()
    updated = Run.objects.filter(pk=run_id, status=Run.Status.PENDING, cancel_requested_at__isnull=True).update(
        status=Run.Status.RUNNING, started_at=now, lease_owner=process_id(),
        lease_expires_at=now + timedelta(seconds=lease_seconds()),
    )
    if not updated:
        return None
    # Admission already marked the thread busy; touching it here could undo a cancel that
    # settled the run between this update and that one.
    # Only the columns the run needs, as a dict: no model instance, and none of the row's
    # other JSON (token usage) decoded.
    return Run.objects.filter(pk=run_id).values("thread_id", "owner_id", "kwargs", "assistant_id", "model_name", "metadata",
                                                "request_id", "trace_id", "traceparent", "created_at").get()


@database_sync_to_async
def _leases_tick(run_ids: list[str], *, renew: bool) -> dict[str, str]:
    """Extend the leases of these runs when due; returns {run_id: cancel action} for those
    someone asked to cancel. One query (two when renewing) however many runs are held."""
    if renew:
        # Run.slots: the thread reservations this process holds are renewed with its runs.
        Run.slots.filter(pk__in=run_ids, lease_owner=process_id()).update(lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds()))
    flagged = Run.objects.filter(pk__in=run_ids, cancel_requested_at__isnull=False).values_list("pk", "cancel_action")
    return {str(pk): action or "interrupt" for pk, action in flagged}


async def keep_leases_forever() -> None:
    """The process's lease keeper, on the runs loop: every CANCEL_POLL_SECONDS it looks for
    cancel flags on the runs this process executes (the backstop when a cancel signal is
    lost or never sent, as without Redis), and every third of the lease it renews their
    leases, and those of the thread reservations its requests hold. Idle processes do not
    query."""
    runtime = get_runtime()
    loop = asyncio.get_running_loop()
    last_renewal = loop.time()
    while True:
        await asyncio.sleep(CANCEL_POLL_SECONDS)
        held = runtime.held_runs() + held_reservations()
        renew = loop.time() - last_renewal >= lease_seconds() / 3
        if not held:
            continue
        try:
            flagged = await _leases_tick(held, renew=renew)
        except asyncio.CancelledError:
            raise
        except Exception:  # a transient DB error must not stop the keeper; the next tick retries
            logger.warning("Could not renew the leases of %d runs", len(held), exc_info=True)
            continue
        if renew:
            last_renewal = loop.time()
        for run_id, action in flagged.items():
            runtime.cancel_here(run_id, action)


# The finish's statements as prepared SQL (deerflow_site/db/prepared_sql.py): the ORM took
# longer to build them than the database took to run them.
@database_sync_to_async
def _finish(run_id: str, *, status: str, thread_status: str, error: str, progress: RunProgress, title: str | None,
            thread_id: str, metadata: dict, events: list[JournalEvent], fallback_title: str = "") -> None:
    """The last journal entries and the final row state, in one transaction (``run_settle``)."""
    totals = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0}
    for entry in progress.usage.values():
        for key in totals:
            totals[key] += entry[key]
    # Only the columns written here: the request's kwargs can be large, and reading and
    # re-writing them would cost more than the rest of the finish.
    columns = {**totals, "token_usage": {"by_model": progress.usage, "llm_call_count": progress.llm_calls,
                                         "message_count": progress.message_count, "subagent_tokens": progress.subagent_tokens,
                                         **{f"{kind}_tokens": n for kind, n in progress.side_tokens.items()}}}
    # The metadata was read at the claim; admission wrote it and nothing changes it since.
    run_settle(run_id=run_id, thread_id=thread_id, status=status, stop_reason=progress.stop_reason, error=error,
               thread_status=thread_status, columns=columns, events=events, title=title, fallback_title=fallback_title,
               metadata=metadata)


# -- translating graph output ---------------------------------------------------------


def _callback_metadata(meta: Any) -> dict:
    if not isinstance(meta, dict):
        return {}
    return to_jsonable({k: v for k, v in meta.items() if k.startswith(_METADATA_KEEP_PREFIXES)})


def _outputs(values: dict | None) -> Any:
    """The run's end state for the journal, without the thread's whole message list: the
    journal already has every message once, and a copy per run grew it with the square of
    the thread's length. The last message stays (the run's answer)."""
    if not values:
        return None
    messages = values.get("messages") or []
    out = {k: v for k, v in values.items() if k != "messages"}
    out["message_count"] = len(messages)
    if messages:
        out["last_message"] = messages[-1]
    return to_jsonable(out)


def _fallback_title(kwargs: dict) -> str:
    """A local title from the run's input, for a run that ended before it was titled."""
    payload = kwargs.get("input")
    messages = payload.get("messages") if isinstance(payload, dict) else None
    for msg in messages or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        role = msg.get("role") or msg.get("type") if isinstance(msg, dict) else None
        if role in ("user", "human") and content:
            text = content if isinstance(content, str) else " ".join(
                str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
            title = local_title(text)
            return "" if title == "New conversation" else title
    return ""


def _graph_input(kwargs: dict) -> Any:
    command = kwargs.get("command")
    if command is not None:
        return Command(resume=command.get("resume"))
    payload = kwargs.get("input")
    return dict(payload) if payload is not None else None


# Run options only the server sets, from the run's custom agent: a client's value is dropped.
_AGENT_ONLY_KEYS = ("soul", "agent_title", "agent_id", "agent_editable", "skills", "temperature", "max_tokens")
# The agent's settings a run may choose for itself (documented run context keys).
_RUN_MAY_OVERRIDE = ("model_name", "thinking_enabled", "reasoning_effort")


def _agent_options(agent: dict | None, requested: dict) -> dict:
    """The custom agent's run options over the request's: the agent decides its persona,
    tools, skills and memory bucket; the request may still pick the model or thinking."""
    options = {k: v for k, v in requested.items() if k not in _AGENT_ONLY_KEYS}
    if not agent:
        return options
    for key, value in agent.items():
        if key == "memory":
            if value is False:  # the agent keeps no memory; a run may still go incognito otherwise
                options["memory"] = False
        elif key in _RUN_MAY_OVERRIDE and options.get(key) is not None:
            continue
        elif value is not None:
            options[key] = value
        else:
            options.pop(key, None)
    return options


def _run_config(run_id: str, meta: dict, kwargs: dict) -> tuple[dict, dict]:
    """(RunnableConfig, runtime context) for the graph."""
    request_config = kwargs.get("config") or {}
    context = dict(kwargs.get("context") or {})
    secrets = get_runtime().secrets.get(run_id)
    configurable = {
        **_agent_options(kwargs.get("agent"), {**(request_config.get("configurable") or {}), **context}),
        "thread_id": meta["thread_id"],
        "run_id": run_id,
        "user_id": str(meta["owner_id"]),
        "assistant_id": meta["assistant_id"] or graphs.LEAD_AGENT,
        "checkpoint_ns": "",
    }
    if meta.get("model_name"):
        configurable.setdefault("model_name", meta["model_name"])
    checkpoint_id = kwargs.get("checkpoint_id") or (kwargs.get("checkpoint") or {}).get("checkpoint_id")
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    config = {
        "configurable": configurable,
        "recursion_limit": request_config.get("recursion_limit") or 100,
        # What every trace of the run carries (harness/observability/tracing.py).
        "metadata": {**(kwargs.get("metadata") or {}), **trace_metadata(
            run_id=run_id, thread_id=meta["thread_id"], request_id=meta.get("request_id") or "", user_id=configurable["user_id"],
            assistant_id=configurable["assistant_id"], agent_name=context.get("agent_name"), model_name=configurable.get("model_name"),
            trace_id=meta.get("trace_id") or "", traceparent=meta.get("traceparent") or "")},
        "tags": list(request_config.get("tags") or []),
    }
    runtime_context = {**configurable}
    if secrets:
        runtime_context["secrets"] = secrets
    return config, runtime_context


def _stream_modes(kwargs: dict) -> tuple[list[str], list[str]]:
    """(requested wire modes, graph modes to ask LangGraph for). Values are always streamed:
    the worker journals messages and keeps the final state from them."""
    requested = kwargs.get("stream_mode") or ["values"]
    # custom too: subagent progress and middleware audit events (a skill activated, its
    # secrets missing) are journaled whether or not the client asked for the mode. A run that
    # writes none gets no chunk from it.
    # updates too: an interrupt shows there as "__interrupt__", so the end of the run needs no
    # state read to know it stopped for input.
    graph_modes = list(dict.fromkeys([GRAPH_MODE.get(m, m) for m in requested] + ["values", "updates", "custom"]))
    return requested, graph_modes


# -- the run ------------------------------------------------------------------------------


async def execute_run(run_id: str, claimed: dict | None = None) -> None:
    """``claimed``: what the claim would read, when admission already wrote the run running."""
    runtime = get_runtime()
    bind_run(run_id)  # this task's context: every line it logs names the run
    runtime.mark_started(run_id)
    try:
        if runtime.cancel_action(run_id):
            raise asyncio.CancelledError  # cancelled before it started
        await _execute(run_id, claimed)
    except asyncio.CancelledError:
        if runtime.cancel_action(run_id) == HANDOFF:
            return  # the server is shutting down: recovery settles the run (apps/runs/shutdown.py)
        runtime.mark_settling(run_id)
        # Cancelled before the run got going (e.g. while claiming it): nothing to roll back,
        # but the row must not stay active.
        await database_sync_to_async(run_settle_cancelled)(run_id=run_id)
        await _end_stream(run_id)
    except Exception:  # bookkeeping itself failed (database down): recovery settles the row
        logger.exception("Run %s could not be executed", run_id)
        await _end_stream(run_id)


async def _end_stream(run_id: str) -> None:
    try:
        await get_runtime().bridge.aend(run_id)
    except RuntimeError:  # already ended (a canceller settled the run first)
        pass
    except Exception:  # the bridge (Redis) is down: the row is still settled; say so once
        logger.warning("Could not publish the end of run %s", run_id, exc_info=True)


async def _publish_quietly(run_id: str, event: str, data: Any) -> None:
    """Publish on a path that must go on to record the run's outcome whatever the bridge does."""
    try:
        await get_runtime().bridge.apublish(run_id, event, data)
    except Exception:
        logger.warning("Could not publish the %s event of run %s", event, run_id, exc_info=True)


async def _execute(run_id: str, claimed: dict | None = None) -> None:
    runtime = get_runtime()
    bridge = runtime.bridge
    meta = claimed if claimed is not None else await _claim(run_id)
    if meta is None:
        # Cancelled before the claim. A canceller in this process leaves the row to this
        # worker, and asgiref may have swallowed the cancel of the claim itself: settle it
        # here (a no-op when the canceller already did).
        await database_sync_to_async(run_settle_cancelled)(run_id=run_id, statuses=(Run.Status.PENDING,))
        await _end_stream(run_id)
        return
    _raise_if_cancelled(run_id)  # claimed, then cancelled while the claim was in flight
    thread_id = meta["thread_id"]
    bind_run(run_id, request_id=meta["request_id"], thread_id=thread_id)
    claimed_at = time.monotonic()
    metrics.run_started()
    # Time to the first event, from admission: the wait users feel. Measured once per run.
    first_event_pending = metrics.enabled()
    kwargs = meta["kwargs"]
    progress = RunProgress()
    requested, graph_modes = _stream_modes(kwargs)
    wire_requested = {WIRE_MODE.get(m, m) for m in requested}
    subgraphs = bool(kwargs.get("stream_subgraphs"))
    config, context = _run_config(run_id, meta, kwargs)
    status, thread_status, error, title = Run.Status.SUCCESS, ThreadStatus.IDLE, "", None
    pre_run = run_state.PreRun()
    graph = None
    runtime.hold_lease(run_id)
    journal = JournalBuffer(thread_id, run_id)
    stamper = SeqStamper(thread_id)
    journal.hold(JournalEvent("run.start", "trace", {"chain": meta["assistant_id"] or graphs.LEAD_AGENT}, {"caller": "lead_agent"}))
    app_config = None
    try:
        app_config = await graphs.run_app_config()
        start = lifecycle.RunStart(meta=meta, kwargs=kwargs, config=config, context=context, app_config=app_config)
        await lifecycle.run_starting(start)
        if start.events:  # what a feature put into the run before it started (memory's context:memory)
            journal.hold(*start.events)
            if "custom" in wire_requested:
                for event in start.events:
                    await bridge.apublish(run_id, "custom", {"type": event.event_type, **event.content})
        checkpointer = await runtime.checkpointer()
        graph = await graphs.build_graph(config, checkpointer)
        graph_input = _graph_input(kwargs)
        # The pre-run head: the rollback point, and which messages are not this run's.
        pre_run = await run_state.prepare(graph, config, graph_input)
        progress.seen_message_ids |= pre_run.message_ids
        stream_kwargs: dict[str, Any] = {"stream_mode": graph_modes, "subgraphs": subgraphs, "context": context,
                                         "durability": graphs.default_durability(graph)}
        for option in ("interrupt_before", "interrupt_after", "durability"):
            if kwargs.get(option):
                stream_kwargs[option] = kwargs[option]
        last_meta: tuple[Any, dict] = (None, {})

        async def stream_turn(turn_input: Any, turn_config: dict) -> bool:
            """One turn of the graph onto the run's stream; True when it stopped for input."""
            nonlocal first_event_pending, last_meta
            stopped = False
            async for chunk in graph.astream(turn_input, turn_config, **stream_kwargs):
                if subgraphs:
                    namespace, mode, data = chunk
                else:
                    namespace, (mode, data) = (), chunk
                wire = WIRE_MODE.get(mode, mode)
                if mode == "values" and not namespace:
                    progress.last_values = data
                    if pre_run.ids_from_first_values and isinstance(data, dict):
                        progress.assume_older(run_state.older_messages(data, pre_run))
                        pre_run.ids_from_first_values = False
                    if isinstance(data, dict):
                        events = message_events(list(data.get("messages") or []), progress, meta.get("model_name") or "")
                        if events:
                            stamper.own([e.content for e in events if e.category == "message"])
                            await journal.add(events)
                            _raise_if_cancelled(run_id)
                elif mode == "updates" and not namespace:
                    stopped = stopped or (isinstance(data, dict) and "__interrupt__" in data)
                elif mode == "custom" and not namespace:
                    events = subagent_events(data, progress) or middleware_events(data)
                    if events:
                        await journal.add(events)
                if wire not in wire_requested:
                    continue
                name = "|".join([wire, *namespace]) if namespace else wire
                if first_event_pending:
                    first_event_pending = False
                    metrics.first_event(time.time() - meta["created_at"].timestamp())
                if mode == "messages":
                    message, cb_meta = data
                    # LangGraph hands every chunk of one model call the same metadata dict:
                    # filtered and converted once per call, not once per token.
                    if cb_meta is not last_meta[0]:
                        last_meta = (cb_meta, _callback_metadata(cb_meta))
                    payload: Any = [to_jsonable(message), last_meta[1]]
                else:
                    payload = to_jsonable(data)
                    if mode == "values" and not namespace:
                        payload = await stamper.stamp(payload)
                        _raise_if_cancelled(run_id)
                await bridge.apublish(run_id, name, payload)
            return stopped

        interrupted = await stream_turn(graph_input, config)
        # More turns in this same run while a feature asks for them (a goal not met yet). They
        # go on from the thread's head, whatever checkpoint the first turn started from.
        head_config = {**config, "configurable": {k: v for k, v in config["configurable"].items()
                                                  if k not in ("checkpoint_id", "checkpoint_map")}}
        async def publish_requested(event: str, data: Any) -> None:
            if event in wire_requested:  # a hook's events reach only clients that asked for the mode
                await bridge.apublish(run_id, event, data)

        while not interrupted and lifecycle.continuations:
            turn = lifecycle.TurnEnd(run_id=run_id, thread_id=thread_id, meta=meta, config=config, context=context,
                                     values=progress.last_values, graph=graph, app_config=app_config,
                                     publish=publish_requested, count_usage=progress.add_side_usage)
            next_input = await lifecycle.next_turn(turn)
            if next_input is None:
                break
            _raise_if_cancelled(run_id)
            interrupted = await stream_turn(next_input, head_config)
        # The last values event is the state the run ended with.
        final = progress.last_values if isinstance(progress.last_values, dict) else {}
        title = final.get("title")
        # Why the agent stopped, when it stopped early: loop_capped, token_budget_exhausted, safety_capped,
        # error_fallback, model_length_capped.
        progress.stop_reason = final.get("stop_reason") or ""
        if interrupted:
            status, thread_status = Run.Status.INTERRUPTED, ThreadStatus.INTERRUPTED
            progress.stop_reason = progress.stop_reason or "human_input_required"
        elif progress.failed_answer:
            # DeerFlow's terminal-response rule: a turn that ended with an error-fallback
            # answer (the provider failed for good, or the model answered nothing after the
            # retry) is a failed run, whatever the graph made of it. stop_reason keeps which.
            status, thread_status, error = Run.Status.ERROR, ThreadStatus.ERROR, progress.failed_answer
            progress.stop_reason = progress.stop_reason or "error_fallback"
            kind = progress.failed_answer_type
            await _publish_quietly(run_id, "error", {"error": kind, "message": error, "name": kind})
            journal.hold(JournalEvent("run.error", "error", error, {"error_type": kind}))
        journal.hold(JournalEvent("run.end", "outputs", _outputs(final or None), {"status": str(status)}))
    except asyncio.CancelledError:
        if runtime.cancel_action(run_id) == HANDOFF:
            raise  # stopped for the shutdown's hand-over: nothing is settled here
        runtime.mark_settling(run_id)
        action = runtime.cancel_action(run_id) or "interrupt"
        status, thread_status = Run.Status.INTERRUPTED, ThreadStatus.IDLE
        progress.stop_reason = "rolled_back" if action == "rollback" else "cancelled"
        if action == "rollback" and graph is not None:
            await run_state.rollback(graph, thread_id, pre_run)
        reason = "run rolled back by request" if action == "rollback" else "run cancelled by request"
        journal.hold(*cancelled_ends(progress, reason), JournalEvent("run.error", "error", reason, {"error_type": "cancelled"}))
    except Exception as exc:  # the run failed; the server keeps going and the client is told why
        logger.warning("Run %s failed: %s: %s", run_id, type(exc).__name__, exc, exc_info=not isinstance(exc, ConfigError))
        status, thread_status = Run.Status.ERROR, ThreadStatus.ERROR
        error = f"{type(exc).__name__}: {exc}"
        progress.stop_reason = "error"
        await _publish_quietly(run_id, "error", {"error": type(exc).__name__, "message": str(exc), "name": type(exc).__name__})
        journal.hold(JournalEvent("run.error", "error", str(exc), {"error_type": type(exc).__name__}))
    finally:
        runtime.mark_settling(run_id)  # finishing now: a late cancel changes nothing
    outcome = lifecycle.RunOutcome(run_id=run_id, thread_id=thread_id, status=status, stop_reason=progress.stop_reason,
                                   meta=meta, context=context, config=config, values=progress.last_values, graph=graph,
                                   app_config=app_config)
    settling = await lifecycle.run_settling(outcome)
    journal.hold(*settling.events)
    if settling.error and status == Run.Status.SUCCESS:
        # A feature found the run failed its contract (outputs never presented): recorded as
        # an error, as DeerFlow does; the stream already carried the answer.
        status, thread_status, error = Run.Status.ERROR, ThreadStatus.ERROR, settling.error
        outcome = dataclasses.replace(outcome, status=status)
    try:
        await _finish(run_id, status=status, thread_status=thread_status, error=error, progress=progress, title=title,
                      thread_id=thread_id, metadata=meta["metadata"], events=await journal.drain(),
                      fallback_title="" if title or status == Run.Status.SUCCESS else _fallback_title(kwargs))
        await lifecycle.run_finished(outcome)
    finally:
        await _end_stream(run_id)
        seconds = time.monotonic() - claimed_at
        metrics.run_finished(str(status), seconds, progress.usage)
        logger.info("Run finished", extra={"status": str(status), "stop_reason": progress.stop_reason, "duration_ms": round(seconds * 1000)})
