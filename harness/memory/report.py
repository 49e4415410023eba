"""What ``/api/memory/config`` and ``/api/memory/status`` answer, and the embedded client's
``get_memory_config`` / ``get_memory_status``: one function each, so the two never drift."""

from __future__ import annotations

from typing import Any

from harness.memory.types import MemoryDoc

# The short config in the status answer (DeerFlow's shape); the full one lists every key.
STATUS_KEYS = ("enabled", "injection_enabled")


def memory_config_json(cfg: Any, doc: MemoryDoc) -> dict[str, Any]:
    """Every ``memory:`` setting as loaded (defaults filled in), and whether this user's
    memory is paused."""
    return {**cfg.model_dump(mode="json"), "paused": doc.paused}


def memory_status_json(cfg: Any, doc: MemoryDoc) -> dict[str, Any]:
    return {"config": {**{k: getattr(cfg, k) for k in STATUS_KEYS}, "paused": doc.paused}, "data": doc.to_api()}
