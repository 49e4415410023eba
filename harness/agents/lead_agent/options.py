"""Runtime options of a lead-agent build, read from ``config["configurable"]``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class LeadAgentOptions:
    model_name: str | None = None
    thinking_enabled: bool = False
    is_plan_mode: bool = False
    subagent_enabled: bool = False
    # None: the config's subagents.max_concurrent / max_total_per_run.
    max_concurrent_subagents: int | None = None
    max_total_subagents: int | None = None
    agent_name: str | None = None
    non_interactive: bool = False
    tool_groups: tuple[str, ...] | None = None
    # A custom agent's parts, set by the server from the agent row (never from the client):
    # its persona, display name, id, whether the run's user may edit it, its skills allowlist
    # and model settings. ``agent_name`` above is its memory bucket.
    soul: str | None = None
    agent_title: str | None = None
    agent_id: str | None = None
    agent_editable: bool = False
    skills: tuple[str, ...] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    is_bootstrap: bool = False
    # Set by the server when the run's user, thread or agent has knowledge collections: the
    # run gets ``knowledge_search`` (which checks access again on every call).
    knowledge: bool = False
    # Guards: None takes config.yaml's loop_detection / token_budget / tool_output values; a
    # run may tighten or relax them.
    token_budget: int | None = None
    loop_warn_after: int | None = None
    loop_stop_after: int | None = None
    max_tool_output_chars: int | None = None
    llm_max_retries: int = 2
    llm_retry_initial_delay: float = 1.0

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None, **overrides: Any) -> LeadAgentOptions:
        configurable = dict((config or {}).get("configurable") or {})
        context = (config or {}).get("context")
        if isinstance(context, Mapping):
            configurable = {**configurable, **context}
        configurable.update({k: v for k, v in overrides.items() if v is not None})
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in configurable.items() if k in known and v is not None}
        for key in ("tool_groups", "skills"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        if values.get("max_concurrent_subagents") is not None:
            values["max_concurrent_subagents"] = max(1, min(4, int(values["max_concurrent_subagents"])))
        if values.get("max_total_subagents") is not None:
            values["max_total_subagents"] = max(1, min(50, int(values["max_total_subagents"])))
        return cls(**values)
