"""Reads: the assistants a caller can run (the lead agent; custom agents join later) and models."""

from __future__ import annotations

import datetime as dt

from apps.runs.graphs import LEAD_AGENT
from deerflow_site.errors import NotFound
from harness.config.loader import get_app_config

_EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC).isoformat()


def _lead_agent() -> dict:
    return {
        "assistant_id": LEAD_AGENT,
        "graph_id": LEAD_AGENT,
        "name": LEAD_AGENT,
        "description": "DeerFlow's lead agent: plans, uses its sandbox and tools, delegates to subagents.",
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "version": 1,
        "created_at": _EPOCH,
        "updated_at": _EPOCH,
    }


def assistant_search(*, graph_id: str | None = None, name: str | None = None, limit: int = 10, offset: int = 0) -> list[dict]:
    assistants = [_lead_agent()]
    if graph_id:
        assistants = [a for a in assistants if a["graph_id"] == graph_id]
    if name:
        assistants = [a for a in assistants if name.lower() in a["name"].lower()]
    return assistants[offset : offset + max(0, limit)]


def assistant_get(*, assistant_id: str) -> dict:
    if assistant_id == LEAD_AGENT:
        return _lead_agent()
    raise NotFound(f"Assistant {assistant_id} not found")


def model_list() -> list[dict]:
    # The latest capability probe of each model (apps.governance): one small query.
    from apps.governance.probes import probe_summaries

    probes = probe_summaries()
    return [
        {
            "name": m.name,
            "model": (m.model_extra or {}).get("model") or (m.model_extra or {}).get("model_name"),
            "display_name": m.label,
            "description": m.description,
            "supports_thinking": m.supports_thinking,
            "supports_vision": m.supports_vision,
            "available": m.unavailable_reason is None,
            "unavailable_reason": m.unavailable_reason,
            "probe": probes.get(m.name),
            # A model that failed the tool-calling probe is not offered unless an admin allows it.
            "selectable": m.unavailable_reason is None and not (probes.get(m.name) or {}).get("blocked", False),
        }
        for m in get_app_config().models
    ]
