"""Reads: the agents a user can see and run, the assistants API views of them, and models.

An agent is visible to its owner and, when ``shared``, to every user on the server; anyone
else gets a 404 that never reveals it exists. Only the owner may change it
(``agent_get_owned``). ``lead_agent`` is the built-in assistant and costs no query.
"""

from __future__ import annotations

import datetime as dt
import uuid

from django.db.models import Q

from apps.agents.models import Agent
from apps.errors import NotFound
from apps.runs.graphs import LEAD_AGENT
from harness.config.loader import get_app_config
from harness.models.factory import api_model_entry

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


def _as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _visible(user) -> Q:
    return Q(owner_id=user.pk) | Q(shared=True)


def agent_list_for_user(*, user, query: str = "") -> list[Agent]:
    agents = Agent.objects.filter(_visible(user)).select_related("owner")
    if query:
        agents = agents.filter(Q(name__icontains=query) | Q(display_name__icontains=query) | Q(description__icontains=query))
    # Own agents first, then shared ones.
    return sorted(agents, key=lambda a: (a.owner_id != user.pk, a.name, str(a.owner_id)))


def agent_get_for_user(*, user, key: str) -> Agent:
    """An agent by the owner's name for it or by its assistant id (a shared one only by id)."""
    agent_id = _as_uuid(key)
    found = Agent.objects.filter(_visible(user), pk=agent_id) if agent_id else Agent.objects.filter(owner_id=user.pk, name=str(key).lower())
    agent = found.select_related("owner").first()
    if agent is None:
        raise NotFound(f"Agent {key} not found")
    return agent


def agent_get_owned(*, user, key: str) -> Agent:
    """For changes: another user's agent, shared or not, is a 404 here too."""
    agent = agent_get_for_user(user=user, key=key)
    if agent.owner_id != user.pk:
        raise NotFound(f"Agent {key} not found")
    return agent


def agent_name_available(*, user, name: str) -> bool:
    return not Agent.objects.filter(owner_id=user.pk, name=name.lower()).exists()


def agent_settings(agent: Agent) -> dict:
    """The agent's definition: the versioned part, the same keys the API's update takes."""
    return {
        "name": agent.name,
        "display_name": agent.display_name,
        "description": agent.description,
        "soul": agent.soul,
        "model": agent.model or None,
        "model_settings": {"temperature": agent.temperature, "max_tokens": agent.max_tokens},
        "thinking_enabled": agent.thinking_enabled,
        "reasoning_effort": agent.reasoning_effort or None,
        "tool_groups": agent.tool_groups,
        "skills": agent.skills,
        "memory_enabled": agent.memory_enabled,
        "avatar": agent.avatar,
        "color": agent.color,
        "shared": agent.shared,
        "github": agent.github,
    }


def agent_to_dict(agent: Agent, *, user) -> dict:
    return {
        **agent_settings(agent),
        "assistant_id": str(agent.pk),
        "owner": agent.owner.username,
        "editable": agent.owner_id == user.pk,
        "version": agent.version,
        "created_at": agent.created_at.isoformat(),
        "updated_at": agent.updated_at.isoformat(),
    }


def _assistant(agent: Agent, *, settings: dict, version: int, created_at, updated_at=None) -> dict:
    context = {k: v for k, v in settings.items() if k not in ("name", "description")}
    out = {
        "assistant_id": str(agent.pk),
        "graph_id": LEAD_AGENT,
        "name": settings["name"],
        "description": settings["description"],
        "config": {},
        "context": context,
        "metadata": {**(agent.metadata or {}), "created_by": "user", "owner": agent.owner.username},
        "version": version,
        "created_at": created_at.isoformat(),
    }
    if updated_at is not None:
        out["updated_at"] = updated_at.isoformat()
    return out


def agent_to_assistant(agent: Agent) -> dict:
    return _assistant(agent, settings=agent_settings(agent), version=agent.version, created_at=agent.created_at, updated_at=agent.updated_at)


def assistant_search(*, user, graph_id: str | None = None, name: str | None = None, metadata: dict | None = None,
                     limit: int = 10, offset: int = 0) -> list[dict]:
    assistants = [_lead_agent()] + [agent_to_assistant(a) for a in agent_list_for_user(user=user)]
    if graph_id:
        assistants = [a for a in assistants if a["graph_id"] == graph_id]
    if name:
        assistants = [a for a in assistants if name.lower() in a["name"].lower()]
    if metadata:
        assistants = [a for a in assistants if all(a["metadata"].get(k) == v for k, v in metadata.items())]
    return assistants[offset : offset + max(0, limit)]


def assistant_get(*, user, assistant_id: str) -> dict:
    if assistant_id == LEAD_AGENT:
        return _lead_agent()
    return agent_to_assistant(_assistant_agent(user, assistant_id))


def _assistant_agent(user, assistant_id: str) -> Agent:
    try:
        return agent_get_for_user(user=user, key=assistant_id)
    except NotFound:
        raise NotFound(f"Assistant {assistant_id} not found") from None


def assistant_versions(*, user, assistant_id: str, limit: int = 10, offset: int = 0) -> list[dict]:
    if assistant_id == LEAD_AGENT:
        return [_lead_agent()]
    agent = _assistant_agent(user, assistant_id)
    rows = agent.versions.order_by("-version")[offset : offset + max(0, limit)]
    return [_assistant(agent, settings=v.snapshot, version=v.version, created_at=v.created_at) for v in rows]


def run_agent_for_user(*, user, assistant_id: str | None) -> dict | None:
    """What a run needs of its assistant: None for the lead agent (no query), else the
    agent's settings as run options, read in one query. Unknown or not visible: 404."""
    if assistant_id in (None, "", LEAD_AGENT):
        return None
    agent_id = _as_uuid(assistant_id)
    found = Agent.objects.filter(_visible(user), pk=agent_id) if agent_id else Agent.objects.filter(owner_id=user.pk, name=str(assistant_id).lower())
    row = found.values("pk", "owner_id", "name", "display_name", "soul", "model", "temperature", "max_tokens", "thinking_enabled",
                       "reasoning_effort", "tool_groups", "skills", "memory_enabled").first()
    if row is None:
        raise NotFound(f"Assistant {assistant_id} not found")
    own = row["owner_id"] == user.pk
    return {
        "agent_id": str(row["pk"]),
        # The memory bucket: the agent's name for its owner; someone chatting with a shared
        # agent gets a bucket of their own for it that no name of theirs can collide with.
        "agent_name": row["name"] if own else f"shared-{row['pk']}",
        "agent_title": row["display_name"] or row["name"],
        "agent_editable": own,
        "soul": row["soul"] or None,
        "model_name": row["model"] or None,
        "temperature": row["temperature"],
        "max_tokens": row["max_tokens"],
        "thinking_enabled": row["thinking_enabled"],
        "reasoning_effort": row["reasoning_effort"] or None,
        "tool_groups": row["tool_groups"],
        "skills": row["skills"],
        "memory": None if row["memory_enabled"] else False,
    }


def github_bound_agents(*, repo: str) -> list[dict]:
    """Every agent, of any owner, whose ``github`` block binds ``repo``: what a webhook
    delivery fans out to. One query; the blocks are small, so matching is done here."""
    repo = repo.lower()
    found = []
    for agent in Agent.objects.filter(github__isnull=False).select_related("owner").order_by("created_at"):
        block = agent.github if isinstance(agent.github, dict) else {}
        binding = next((b for b in block.get("bindings") or [] if b.get("repo") == repo), None)
        if binding is None or not agent.owner.is_active:
            continue
        found.append({"agent_id": str(agent.pk), "name": agent.name, "title": agent.display_name or agent.name,
                      "owner": agent.owner, "bot_login": block.get("bot_login") or "",
                      "recursion_limit": block.get("recursion_limit"), "triggers": binding.get("triggers") or {},
                      "mention_logins": sorted({t.get("mention_login") for b in block.get("bindings") or []
                                                for t in (b.get("triggers") or {}).values() if t.get("mention_login")})})
    return found


def agent_picker_list(*, user) -> list[dict]:
    """What the chat's agent picker needs of each agent the user can talk to (one query)."""
    rows = Agent.objects.filter(_visible(user)).select_related("owner").only(
        "pk", "name", "display_name", "avatar", "color", "model", "thinking_enabled", "owner_id", "owner__username")
    return [{"assistant_id": str(a.pk), "name": a.name, "display_name": a.display_name or a.name, "avatar": a.avatar,
             "color": a.color, "model": a.model or None, "thinking_enabled": a.thinking_enabled,
             "editable": a.owner_id == user.pk, "owner": a.owner.username}
            for a in sorted(rows, key=lambda a: (a.owner_id != user.pk, a.name))]


def model_get(name: str) -> dict:
    """One entry of ``model_list()`` by its config name; NotFound names it."""
    found = next((m for m in model_list() if m["name"] == name), None)
    if found is None:
        raise NotFound(f"Model '{name}' not found")
    return found


def model_list() -> list[dict]:
    # The latest capability probe of each model (apps.governance): one small query.
    from apps.governance.probes import probe_summaries

    probes = probe_summaries()
    return [api_model_entry(m, probes.get(m.name)) for m in get_app_config().models]
