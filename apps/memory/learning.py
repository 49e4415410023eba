"""Processing one passive update: the updater model reads the conversation and the user's
memory changes. Called by the in-process queue (``updates.py``) and by the Celery task."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections

from apps.memory.stores import DjangoMemoryStore
from apps.runs.services import run_usage_add
from harness.agents.middlewares.token_usage import usage_counts
from harness.config import AppConfig, class_path, get_app_config
from harness.memory.updater import UpdateJob, UpdateOutcome, run_update
from harness.models import create_chat_model
from harness.observability.tracing import standalone_config, traced

# The cache key holding the token of a thread's latest queued job (Celery only).
JOB_TOKEN_KEY = "memory-job:{thread_id}"


# The config model of the latest config: building one costs an OpenAI client and its HTTP
# clients (each reads the proxy settings out of the whole environment), and is needed only
# once per config. A reloaded config.yaml is a new AppConfig object, hence a new model.
_built: tuple[AppConfig, Any] | None = None


def _updater_model() -> Any:
    global _built
    # DEERFLOW_MEMORY_MODEL_FACTORY ("module:callable") lets tests and operators supply the
    # model object, called per update (a factory keeps its own model if it wants to);
    # otherwise memory.model_name (or the first model) from config.yaml.
    factory = getattr(settings, "DEERFLOW_MEMORY_MODEL_FACTORY", "")
    if factory:
        return class_path.resolve(factory)()
    app = get_app_config()
    built = _built
    if built is not None and built[0] is app:
        return built[1]
    model = create_chat_model(app.memory.model_name or app.models[0].name, config=app)
    _built = (app, model)  # two updates racing here both build one; either is right
    return model


def process_job(job: UpdateJob) -> UpdateOutcome:
    return process_jobs([job])


def process_jobs(jobs: list[UpdateJob]) -> UpdateOutcome:
    """One update from a batch of one owner's and agent's conversations (the queue's). Its trace
    and the usage budgets count are the latest run's: one call learned from them all."""
    app = get_app_config()
    cfg = app.memory
    close_old_connections()
    job = jobs[-1]
    # Its own trace (DeerFlow's name for it), in the session of the thread it learned from.
    trace = standalone_config(app.tracing, "memory_agent", parent={"run_id": job.run_id, "agent_name": job.agent},
                              thread_id=job.thread_id, user_id=str(job.owner))
    try:
        model = _updater_model()
        outcome = traced(trace, lambda: run_update(DjangoMemoryStore(), model, jobs, cfg))
        if outcome.usage and get_app_config().budgets.enabled:  # budgets count memory updates toward the user
            run_usage_add(run_id=job.run_id, model_name=outcome.model_name, counts=usage_counts(outcome.usage), kind="memory")
        return outcome
    finally:
        close_old_connections()


def process_if_latest(job_data: dict, token: str) -> None:
    """The Celery side of the dedup: a job replaced by a later one on its thread does nothing."""
    job = UpdateJob(**job_data)
    if cache.get(JOB_TOKEN_KEY.format(thread_id=job.thread_id)) not in (None, token):
        return
    process_job(job)
