"""Settling runs whose process died: once at startup, then periodically on the runs loop.

A worker renews its run's lease every 10 s (lease: 30 s), so only runs whose owner stopped
renewing are touched; runs of other live processes are left alone.
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import DatabaseSyncToAsync
from django.db import DatabaseError

logger = logging.getLogger(__name__)

SWEEP_SECONDS = 15


def recover_on_startup() -> int:
    from apps.runs.services import runs_recover_orphans

    try:
        return runs_recover_orphans()
    except DatabaseError as exc:  # not migrated yet: `make run` migrates first; say it once
        logger.warning("Skipped run recovery at startup: %s", exc)
        return 0


async def sweep_forever() -> None:
    from apps.runs.services import runs_recover_orphans

    recover = DatabaseSyncToAsync(runs_recover_orphans, thread_sensitive=False)
    while True:
        await asyncio.sleep(SWEEP_SECONDS)
        try:
            await recover()
        except Exception as exc:  # a failed sweep is retried on the next tick
            logger.warning("Run recovery sweep failed (retrying in %ss): %s", SWEEP_SECONDS, exc)
