"""Passive updates: what a finished run queues, and the processing of a queued job.

On the embedded stack the queue is in this process (``harness.memory.queue``); with
``RUN_EXECUTOR=celery`` a task is sent with the debounce as its countdown, and only the
latest job per thread (a token in the cache) does the work when it fires.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from apps.memory.stores import DjangoMemoryStore
from harness.agents.markers import INTERNAL_KEY, message_text
from harness.config import class_path, get_app_config
from harness.memory.queue import DebouncedQueue
from harness.memory.updater import UpdateJob, UpdateOutcome, run_update

logger = logging.getLogger(__name__)

_queue: DebouncedQueue | None = None
_queue_lock = threading.Lock()


def _updater_model() -> Any:
    # DEERFLOW_MEMORY_MODEL_FACTORY ("module:callable") lets tests and operators supply the
    # model object; otherwise memory.model_name (or the first model) from config.yaml.
    factory = getattr(settings, "DEERFLOW_MEMORY_MODEL_FACTORY", "")
    if factory:
        return class_path.resolve(factory)()
    from harness.models import create_chat_model

    app = get_app_config()
    return create_chat_model(app.memory.model_name or app.models[0].name, config=app)


def process_job(job: UpdateJob) -> UpdateOutcome:
    cfg = get_app_config().memory
    close_old_connections()
    try:
        outcome = run_update(DjangoMemoryStore(), _updater_model(), job, threshold=cfg.fact_confidence_threshold,
                             max_facts=cfg.max_facts)
        if outcome.usage and get_app_config().budgets.enabled:  # budgets count memory updates toward the user
            from apps.governance.services import memory_usage_record

            memory_usage_record(run_id=job.run_id, model_name=outcome.model_name, usage=outcome.usage)
        return outcome
    finally:
        close_old_connections()


def get_queue() -> DebouncedQueue:
    global _queue
    with _queue_lock:
        if _queue is None:
            _queue = DebouncedQueue(process_job, get_app_config().memory.debounce_seconds)
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


def enqueue(job: UpdateJob) -> None:
    if settings.RUN_EXECUTOR == "celery":
        from django.core.cache import cache

        from apps.memory.tasks import update_memory

        token = uuid.uuid4().hex
        delay = get_app_config().memory.debounce_seconds
        cache.set(f"memory-job:{job.thread_id}", token, timeout=int(delay) + 3600)
        update_memory.apply_async(args=[asdict(job), token], countdown=delay)
    else:
        get_queue().add(job)


def process_if_latest(job_data: dict, token: str) -> None:
    """The Celery side of the dedup: a job replaced by a later one on its thread does nothing."""
    from django.core.cache import cache

    job = UpdateJob(**job_data)
    if cache.get(f"memory-job:{job.thread_id}") not in (None, token):
        return
    process_job(job)
