"""What a stream subscriber receives, apart from the bridges that carry it (the bridges and their
compaction both build items)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

END = "end"
GAP = "gap"
HEARTBEAT = "heartbeat"


@dataclass(frozen=True)
class StreamItem:
    """One thing a subscriber receives. ``id`` is None for heartbeats and gaps."""

    event: str
    data: Any
    id: str | None = None
