"""Passive updates: what a finished run queues, and the queue's life across a server's stop.

On the embedded stack the queue is in this process (``harness.memory.queue``), which learns
from one user's threads that are due together in one update; with
``RUN_EXECUTOR=celery`` a task is sent with the debounce as its countdown, and only the
latest job per thread (a token in the cache) does the work when it fires. Processing a job is
``learning.py``'s.

A server that is stopped applies what its queue holds for at most
``memory.shutdown_flush_timeout_seconds`` (``stop_updates``, called by deerflow_site/server/daphne_server.py
once Daphne has stopped serving) and saves the rest as ``PendingMemoryUpdate`` rows, which the
next start queues (``resume_saved_updates``, from deerflow_site/asgi.py).
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, close_old_connections

from apps.memory.learning import JOB_TOKEN_KEY, process_jobs
from apps.memory.models import PendingMemoryUpdate
from apps.memory.tasks import update_memory
from harness.agents.markers import INTERNAL_KEY, message_text
from harness.config import get_app_config
from harness.memory.queue import DebouncedQueue
from harness.memory.updater import UpdateJob

logger = logging.getLogger(__name__)

_queue: DebouncedQueue | None = None
_queue_lock = threading.Lock()


def get_queue() -> DebouncedQueue:
    global _queue
    with _queue_lock:
        if _queue is None:
            _queue = DebouncedQueue(process_jobs, get_app_config().memory.debounce_seconds)
        return _queue


def job_from_run(*, meta: dict, run_id: str, context: dict, values: Any) -> UpdateJob | None:
    """The conversation's user messages and final answers (no tool traffic, nothing hidden)."""
    messages = []
    for m in (values or {}).get("messages") or [] if isinstance(values, dict) else []:
        if m.additional_kwargs.get(INTERNAL_KEY):
            continue
        if m.type == "human":
            role = "user"
        elif m.type == "ai" and not getattr(m, "tool_calls", None):
            role = "assistant"
        else:
            continue
        text = message_text(m).strip()
        if text:
            messages.append({"role": role, "content": text, "id": str(m.id or "")})
    if not messages:
        return None
    return UpdateJob(owner=str(meta["owner_id"]), agent=str(context.get("agent_name") or ""), thread_id=str(meta["thread_id"]),
                     run_id=str(run_id), messages=messages)


def enqueue(job: UpdateJob, *, delay: float | None = None) -> None:
    """Queue ``job``, due after ``delay`` seconds (``memory.debounce_seconds`` when None)."""
    if settings.RUN_EXECUTOR == "celery":
        token = uuid.uuid4().hex
        delay = get_app_config().memory.debounce_seconds if delay is None else delay
        cache.set(JOB_TOKEN_KEY.format(thread_id=job.thread_id), token, timeout=int(delay) + 3600)
        update_memory.apply_async(args=[asdict(job), token], countdown=delay)
    else:
        get_queue().add(job, delay=delay)


# When config.yaml cannot be read as the process stops.
DEFAULT_SHUTDOWN_FLUSH_SECONDS = 10.0


def stop_updates() -> list[UpdateJob]:
    """At a server's stop: apply the queued updates (all due now) for at most
    ``memory.shutdown_flush_timeout_seconds``, then save those not done for the next start. Returns
    the saved jobs. Nothing to do when no run queued an update in this process."""
    with _queue_lock:
        queue = _queue
    if queue is None:
        return []
    try:
        timeout = get_app_config().memory.shutdown_flush_timeout_seconds
    except Exception:  # a config broken since the start must not cost the updates
        timeout = DEFAULT_SHUTDOWN_FLUSH_SECONDS
    left = queue.stop(timeout)
    if not left:
        return []
    saved = []
    close_old_connections()
    try:
        for job in left:
            try:
                PendingMemoryUpdate.objects.create(owner_id=job.owner, thread_id=job.thread_id, job=asdict(job))
                saved.append(job)
            except DatabaseError:  # the user is gone, or the database: this one is lost
                logger.warning("Could not save the memory update of thread %s for the next start", job.thread_id, exc_info=True)
    finally:
        close_old_connections()
    logger.warning("Stopping: %d memory update(s) not applied within %ss, saved for the next start (threads %s)",
                   len(saved), timeout, ", ".join(j.thread_id for j in saved))
    return saved


def resume_saved_updates() -> int:
    """At a server's start: queue the updates an earlier stop saved, due at once (their
    conversations have been quiet since). Each row is taken by the one process that deletes it.
    With memory off, or the agent managing it (``tool_mode``), they wait for it to be on again.
    Returns how many were queued."""
    cfg = get_app_config().memory
    if not cfg.enabled or cfg.tool_mode:
        return 0
    try:
        rows = list(PendingMemoryUpdate.objects.order_by("pk").values_list("pk", "job"))
    except DatabaseError as exc:  # not migrated yet (`make run` migrates first)
        logger.warning("Could not read the saved memory updates: %s", exc)
        return 0
    queued = 0
    for pk, data in rows:
        if not PendingMemoryUpdate.objects.filter(pk=pk).delete()[0]:
            continue  # another server process took it
        try:
            job = UpdateJob(**data)
        except TypeError:
            logger.warning("Dropped a saved memory update that is not a job: %r", data)
            continue
        # In saved order: a thread's later job replaces its earlier one, as in the queue.
        enqueue(job, delay=0)
        queued += 1
    if queued:
        logger.info("Queued %d memory update(s) saved by the last stop", queued)
    return queued
