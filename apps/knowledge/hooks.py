"""Knowledge on the run engine's hook point (registered in ``KnowledgeConfig.ready``): a run
whose user, thread or custom agent can read a collection gets ``knowledge_search``.

The flag goes into the run's options (``configurable["knowledge"]``), which select the cached
graph with the tool; a client's own value under that key is dropped first. Which collections a
search reads is decided again by the store on each call, not here.
"""

from __future__ import annotations

import logging

from apps.knowledge.selectors import run_reads_knowledge
from apps.runs.lifecycle import RunStart
from apps.runs.runtime import database_sync_to_async

logger = logging.getLogger(__name__)

OPTION = "knowledge"


async def before_run(start: RunStart) -> None:
    configurable = start.config.setdefault("configurable", {})
    configurable.pop(OPTION, None)
    start.context.pop(OPTION, None)
    if not start.app_config.knowledge.enabled:
        return
    try:
        reads = await database_sync_to_async(run_reads_knowledge)(
            user_id=int(start.meta["owner_id"]), thread_id=str(start.meta["thread_id"]),
            agent_id=str(configurable.get("agent_id") or ""))
    except Exception:  # knowledge is an aid: a failing read must not fail the run
        logger.warning("Could not list the knowledge collections of run %s", configurable.get("run_id"), exc_info=True)
        return
    if reads:
        configurable[OPTION] = True
        start.context[OPTION] = True
