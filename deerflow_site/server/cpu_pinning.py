"""CPU pinning for server and worker processes (harness/runtime/cpu_affinity.py)."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings

from harness.runtime import cpu_affinity

logger = logging.getLogger(__name__)


def pin_process() -> None:
    """Call once at process start, in the main thread, before the process starts its threads."""
    if not settings.CPU_PINNING:
        return
    cpu = cpu_affinity.pin_to_one_cpu(Path(settings.CPU_PINNING_DIR) if settings.CPU_PINNING_DIR else None)
    if cpu is not None:
        logger.info("process pinned to CPU %s (CPU_PINNING=false to leave it to the scheduler)", cpu)
