"""Garbage collector settings for long-lived server and worker processes."""

from __future__ import annotations

import gc

from django.conf import settings


def tune_gc() -> None:
    """Call once the process has loaded its code. The import-time heap (Django, LangChain,
    LangGraph: a few hundred thousand objects) is moved out of the collector's reach, so full
    collections only walk what the process made since; then the thresholds apply."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*settings.GC_THRESHOLD)
