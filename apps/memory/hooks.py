"""Memory on the run engine's hook points (registered in ``MemoryConfig.ready``): the memory
text goes into a run's context before its graph runs, and a finished run's conversation is
queued for the passive updater.

Both return at once when memory is off or the run is incognito (``context.memory: false``):
no query, no queue. A run given memory journals one ``context:memory`` event (and streams it to
clients reading ``custom``): the block's SHA-256 and counts, as DeerFlow records it.
"""

from __future__ import annotations

import logging

from apps.memory.selectors import memory_context
from apps.memory.updates import enqueue, job_from_run
from apps.runs.journal import JournalEvent
from apps.runs.lifecycle import RunOutcome, RunStart
from apps.runs.runtime import database_sync_to_async
from harness.config import AppConfig
from harness.memory.injection import MEMORY_CONTEXT_EVENT, MEMORY_CONTEXT_KEY

logger = logging.getLogger(__name__)

# DeerFlow's run event for the memory a run was given: its category, and content
# ``{"content_sha256": …}`` (here with counts too), never the memory's text.


def _active(context: dict, app_config: AppConfig) -> bool:
    return context.get("memory") is not False and app_config.memory.enabled


def _last_user_text(kwargs: dict) -> str:
    payload = kwargs.get("input") or {}
    messages = payload.get("messages") if isinstance(payload, dict) else None
    for m in reversed(messages or []):
        if isinstance(m, dict) and m.get("role", m.get("type")) in ("user", "human"):
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
            return str(content or "")[:2000]
    return ""


async def before_run(start: RunStart) -> None:
    """Put the memory text in the run's context (never a value a client sent under its key).
    ``start.app_config`` is the config the run is built from: reading the file here would be
    IO on the runs loop."""
    context, app_config = start.context, start.app_config
    context.pop(MEMORY_CONTEXT_KEY, None)
    (start.config.get("configurable") or {}).pop(MEMORY_CONTEXT_KEY, None)
    if not _active(context, app_config):
        context["memory"] = False  # after_run then knows without reading the config again
        return
    if not app_config.memory.injection_enabled:
        return
    owner_id = start.meta["owner_id"]
    cfg = app_config.memory
    try:
        injected = await database_sync_to_async(memory_context)(
            owner_id=owner_id, agent=str(context.get("agent_name") or ""), query=_last_user_text(start.kwargs),
            max_tokens=cfg.max_injection_tokens, token_counting=cfg.token_counting, retrieval_adapter=cfg.retrieval_adapter)
    except Exception:  # memory is an aid: a failing read must not fail the run
        logger.warning("Could not read the memory of user %s", owner_id, exc_info=True)
        return
    if injected is not None:
        context[MEMORY_CONTEXT_KEY] = injected.text
        start.events.append(JournalEvent(MEMORY_CONTEXT_EVENT, "context", injected.event(), {}))


async def after_run(outcome: RunOutcome) -> None:
    """Queue a finished conversation for the passive updater (in memory; no IO here)."""
    if not outcome.succeeded or outcome.app_config is None:
        return
    if outcome.context.get("memory") is False or outcome.app_config.memory.tool_mode:
        return
    try:
        job = job_from_run(meta=outcome.meta, run_id=outcome.run_id, context=outcome.context, values=outcome.values)
        if job is not None:
            enqueue(job)
    except Exception:
        logger.warning("Could not queue the memory update of run %s", outcome.run_id, exc_info=True)
