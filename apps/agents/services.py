"""Writes: create, change, duplicate and delete custom agents; every change is a version.

``agent_clean`` is the one validation every entry point shares (the REST API, the assistants
API, the agent tools), so an unknown model, tool group or skill is the same 422 naming it
everywhere. Deleting an agent leaves its threads alone: they keep the assistant id and stay
readable; a new run on them answers 404 for the assistant.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from django.db import IntegrityError, transaction

from apps.agents.github import github_clean
from apps.agents.models import Agent, AgentVersion
from apps.agents.selectors import agent_settings
from apps.errors import Conflict, InvalidRequest
from harness.config import get_app_config

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
REASONING_EFFORTS = ("minimal", "low", "medium", "high")
COLOR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")
MAX_SOUL_CHARS = 64_000
# Keys an API reply carries that a client may send back unchanged.
READ_ONLY = frozenset({"assistant_id", "owner", "editable", "version", "created_at", "updated_at"})
FIELDS = frozenset({"name", "display_name", "description", "soul", "model", "model_settings", "thinking_enabled",
                    "reasoning_effort", "tool_groups", "skills", "memory_enabled", "avatar", "color", "shared", "metadata", "github"})


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidRequest("name: required")
    clean = name.strip().lower()
    if not NAME_RE.match(clean):
        raise InvalidRequest(f"name: {name!r} is not a valid agent name; use 1-64 letters, digits, '-' or '_' "
                             "(no spaces, dots or slashes), starting with a letter or digit")
    return clean


def _text(data: dict, key: str, limit: int) -> str:
    value = data[key]
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidRequest(f"{key}: must be a string")
    if len(value) > limit:
        raise InvalidRequest(f"{key}: longer than {limit} characters")
    return value


def _names(data: dict, key: str, known: set[str], what: str) -> list[str] | None:
    value = data[key]
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidRequest(f"{key}: must be a list of names or null")
    unknown = [v for v in value if v not in known]
    if unknown:
        raise InvalidRequest(f"{key}: unknown {what} {', '.join(repr(u) for u in unknown)}; "
                             f"available: {', '.join(sorted(known)) or 'none'}")
    return list(dict.fromkeys(value))


def tool_group_names() -> set[str]:
    app = get_app_config()
    return {g.name for g in app.tool_groups} or {t.group for t in app.tools}


def _skill_names(owner) -> set[str]:
    from apps.skills.selectors import skill_set_for_user

    return {e.skill.name for e in skill_set_for_user(user=owner).entries}


def agent_clean(*, owner, data: Any, partial: bool) -> dict[str, Any]:
    """Validated model field values from an API body (only the keys given when partial)."""
    if not isinstance(data, dict):
        raise InvalidRequest("body: must be a JSON object")
    unknown = sorted(set(data) - FIELDS - READ_ONLY)
    if unknown:
        raise InvalidRequest(f"unknown field(s): {', '.join(unknown)}")
    data = {k: v for k, v in data.items() if k in FIELDS}
    if not partial and "name" not in data:
        raise InvalidRequest("name: required")
    out: dict[str, Any] = {}
    if "name" in data:
        out["name"] = check_name(data["name"])
    for key, limit in (("display_name", 128), ("description", 2000), ("soul", MAX_SOUL_CHARS), ("avatar", 16)):
        if key in data:
            out[key] = _text(data, key, limit)
    if "color" in data:
        out["color"] = _text(data, "color", 16)
        if out["color"] and not COLOR_RE.match(out["color"]):
            raise InvalidRequest("color: use #rrggbb")
    if "model" in data:
        model = data["model"] or ""
        names = [m.name for m in get_app_config().models]
        if not isinstance(model, str) or (model and model not in names):
            raise InvalidRequest(f"model: unknown model {model!r}; configured: {', '.join(names) or 'none'}")
        out["model"] = model
    if "model_settings" in data:
        settings = data["model_settings"] or {}
        if not isinstance(settings, dict) or set(settings) - {"temperature", "max_tokens"}:
            raise InvalidRequest("model_settings: an object with temperature and max_tokens")
        temperature, max_tokens = settings.get("temperature"), settings.get("max_tokens")
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 <= temperature <= 2):
            raise InvalidRequest("model_settings.temperature: a number from 0 to 2, or null")
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 1_000_000):
            raise InvalidRequest("model_settings.max_tokens: a positive integer, or null")
        out["temperature"], out["max_tokens"] = (float(temperature) if temperature is not None else None), max_tokens
    for key in ("thinking_enabled", "memory_enabled", "shared"):
        if key in data:
            if not isinstance(data[key], bool):
                raise InvalidRequest(f"{key}: must be true or false")
            out[key] = data[key]
    if "reasoning_effort" in data:
        effort = data["reasoning_effort"] or ""
        if effort and effort not in REASONING_EFFORTS:
            raise InvalidRequest(f"reasoning_effort: one of {', '.join(REASONING_EFFORTS)}, or null")
        out["reasoning_effort"] = effort
    if "tool_groups" in data:
        out["tool_groups"] = _names(data, "tool_groups", tool_group_names(), "tool group")
    if "skills" in data:
        out["skills"] = _names(data, "skills", _skill_names(owner), "skill")
    if "github" in data:
        out["github"] = github_clean(data["github"])
    if "metadata" in data:
        if not isinstance(data["metadata"], dict):
            raise InvalidRequest("metadata: must be an object")
        out["metadata"] = data["metadata"]
    return out


def _record_version(agent: Agent) -> None:
    AgentVersion.objects.create(agent=agent, version=agent.version, snapshot=agent_settings(agent))


def _taken(name: str) -> Conflict:
    return Conflict(f"Agent {name} already exists")


def agent_create(*, owner, data: Any, agent_id: str | None = None) -> Agent:
    fields = agent_clean(owner=owner, data=data, partial=False)
    if Agent.objects.filter(owner=owner, name=fields["name"]).exists():
        raise _taken(fields["name"])
    extra = {"pk": agent_id} if agent_id else {}
    try:
        with transaction.atomic():
            agent = Agent.objects.create(owner=owner, version=1, **extra, **fields)
            _record_version(agent)
    except IntegrityError:  # a concurrent create took the name (or the id) first
        raise _taken(fields["name"]) from None
    return agent


def agent_update(*, agent: Agent, data: Any) -> Agent:
    """Changes the given keys; a change that alters nothing writes no new version."""
    fields = agent_clean(owner=agent.owner, data=data, partial=True)
    before = agent_settings(agent), agent.metadata
    for key, value in fields.items():
        setattr(agent, key, value)
    if (agent_settings(agent), agent.metadata) == before:
        return agent
    if "name" in fields and Agent.objects.filter(owner_id=agent.owner_id, name=agent.name).exclude(pk=agent.pk).exists():
        raise _taken(agent.name)
    try:
        with transaction.atomic():
            # The version comes from the row under its lock, so two concurrent edits get two numbers.
            current = Agent.objects.select_for_update().values_list("version", flat=True).get(pk=agent.pk)
            agent.version = current + 1
            agent.save()
            _record_version(agent)
    except IntegrityError:
        raise _taken(agent.name) from None
    return agent


def agent_duplicate(*, agent: Agent, owner, name: str | None = None) -> Agent:
    """A copy owned by *owner* (a shared agent can be copied, then edited as one's own)."""
    data = {k: v for k, v in agent_settings(agent).items() if k != "shared"}
    base = check_name(name) if name else f"{agent.name}-copy"
    candidate = base
    if not name:
        n = 2
        while Agent.objects.filter(owner=owner, name=candidate).exists():
            candidate, n = f"{base[:60]}-{n}", n + 1
    data["name"] = candidate
    if data["display_name"]:
        data["display_name"] = f"{data['display_name']} (copy)"[:128]
    if data["skills"] is not None:  # the copier may not have every skill the original names
        data["skills"] = [s for s in data["skills"] if s in _skill_names(owner)]
    return agent_create(owner=owner, data=data)


def agent_delete(*, agent: Agent) -> None:
    agent.delete()


# -- the assistants API (LangGraph shapes) ----------------------------------------------

_ASSISTANT_KEYS = frozenset({"graph_id", "config", "context", "metadata", "name", "description", "assistant_id", "if_exists"})


def _from_assistant(body: Any, *, creating: bool) -> dict:
    if not isinstance(body, dict):
        raise InvalidRequest("body: must be a JSON object")
    unknown = sorted(set(body) - _ASSISTANT_KEYS)
    if unknown:
        raise InvalidRequest(f"unknown field(s): {', '.join(unknown)}")
    graph_id = body.get("graph_id")
    if (creating or graph_id is not None) and graph_id != "lead_agent":
        raise InvalidRequest(f"graph_id: unknown graph {graph_id!r}; the only graph is 'lead_agent'")
    context, config = body.get("context") or {}, body.get("config") or {}
    configurable = config.get("configurable") or {} if isinstance(config, dict) else None
    if not isinstance(context, dict) or not isinstance(configurable, dict):
        raise InvalidRequest("context and config.configurable: must be objects")
    settings = {**configurable, **context}
    if "model_name" in settings and "model" not in settings:
        settings["model"] = settings.pop("model_name")
    data = dict(settings)
    for key in ("name", "description", "metadata"):
        if body.get(key) is not None:
            data[key] = body[key]
    return data


def assistant_create(*, owner, body: Any) -> tuple[Agent, bool]:
    """(agent, created). ``if_exists: do_nothing`` returns the existing agent of that id or name."""
    data = _from_assistant(body, creating=True)
    if_exists = body.get("if_exists") or "raise"
    if if_exists not in ("raise", "do_nothing"):
        raise InvalidRequest("if_exists: 'raise' or 'do_nothing'")
    agent_id = body.get("assistant_id")
    if agent_id is not None:
        try:
            agent_id = str(uuid.UUID(str(agent_id)))
        except ValueError:
            raise InvalidRequest("assistant_id: must be a UUID") from None
        existing = Agent.objects.filter(pk=agent_id).first()
        if existing is not None:
            if existing.owner_id == owner.pk and if_exists == "do_nothing":
                return existing, False
            raise Conflict(f"Assistant {agent_id} already exists")
    if if_exists == "do_nothing" and isinstance(data.get("name"), str):
        existing = Agent.objects.filter(owner=owner, name=data["name"].strip().lower()).first()
        if existing is not None:
            return existing, False
    return agent_create(owner=owner, data=data, agent_id=agent_id), True


def assistant_update(*, agent: Agent, body: Any) -> Agent:
    return agent_update(agent=agent, data=_from_assistant(body, creating=False))
