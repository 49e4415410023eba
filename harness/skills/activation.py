"""Which skills are active in a run, and what that allows: tools, secrets, the prompt block.

A skill becomes active in a run when the user starts it with ``/skill-name`` or the agent
loads it by reading its ``SKILL.md``; either way an entry lands in ``skill_context`` with
the run's id, so activity ends with the run. The entry names the skill and its path only:
never its secrets. Every decision here is made again from that state and the run's skill
set on each model call and tool call, so nothing stale is trusted.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from harness.skills.loader import Skill
from harness.skills.state import SkillSet

# Words the chat and the channels use for commands of their own; never skill names.
RESERVED = frozenset({"new", "help", "bootstrap", "status", "models", "memory", "goal", "clear", "stop", "cancel"})
# Tools an active skill never takes away: finding and loading skills is how work starts, and
# reviewing one reads it as data without giving it any authority (DeerFlow keeps it too).
DISCOVERY_TOOLS = frozenset({"describe_skill", "ask_clarification", "review_skill_package"})
_SLASH = re.compile(r"^/([a-z0-9][a-z0-9-]{0,63})(?:[ \t\r\n]+(.*))?$", re.DOTALL)
MAX_PROMPT_DESCRIPTION = 300


def parse_slash(text: str) -> tuple[str, str] | None:
    """``/name task`` -> (name, task); reserved words and anything else -> None."""
    match = _SLASH.match(text or "")
    if not match or match.group(1) in RESERVED:
        return None
    return match.group(1), (match.group(2) or "").strip()


# -- the run's skill set, resolved once per run --------------------------------------------

_snapshots: OrderedDict[str, SkillSet] = OrderedDict()
_snap_lock = threading.Lock()
_MAX_SNAPSHOTS = 512


def remember_snapshot(run_id: str | None, skills: SkillSet) -> None:
    if not run_id:
        return
    with _snap_lock:
        _snapshots[run_id] = skills
        _snapshots.move_to_end(run_id)
        while len(_snapshots) > _MAX_SNAPSHOTS:
            _snapshots.popitem(last=False)


def snapshot(run_id: str | None) -> SkillSet | None:
    if not run_id:
        return None
    with _snap_lock:
        return _snapshots.get(run_id)


def forget_snapshot(run_id: str | None) -> None:
    with _snap_lock:
        _snapshots.pop(run_id or "", None)


# -- what is active ----------------------------------------------------------------------


def context_entry(skill: Skill, *, run_id: str, source: str) -> dict[str, str]:
    return {"name": skill.name, "path": skill.skill_md_path, "source": source, "run_id": run_id}


def active_skills(state: Mapping[str, Any] | None, skills: SkillSet | None, run_id: str | None) -> tuple[list[Skill], Skill | None]:
    """(active skills, the slash-activated one if any). The slash skill comes from the run's
    user message; loaded ones from ``skill_context`` entries of this run. Both are checked
    against the skill set: a disabled or removed skill is not active, whatever state says."""
    if not skills or not state:
        return [], None
    active: list[Skill] = []
    slash = slash_skill(state.get("messages"), skills)
    if slash is not None:
        active.append(slash)
    for entry in (state.get("skill_context") or []) if run_id else []:
        if not isinstance(entry, Mapping) or entry.get("run_id") != run_id:
            continue
        skill = skills.by_skill_md(str(entry.get("path", "")))
        if skill is None or skill.name != entry.get("name"):
            continue
        if skill not in active:
            active.append(skill)
    return active, slash


def slash_skill(messages, skills: SkillSet) -> Skill | None:
    """The enabled skill the run's user message starts with ``/name``, if any."""
    from harness.agents.markers import is_real_user_message, message_text

    for m in reversed(messages or []):
        if is_real_user_message(m):
            parsed = parse_slash(message_text(m).strip())
            entry = skills.get(parsed[0]) if parsed else None
            return entry.skill if entry is not None and entry.enabled else None
    return None


def allowed_tool_names(active: list[Skill], slash: Skill | None) -> frozenset[str] | None:
    """None: no restriction. A slash-activated skill's declaration rules its run, so a
    skill read later cannot widen it; otherwise the declaring skills' union applies."""
    if slash is not None and slash.meta.allowed_tools is not None:
        return frozenset(slash.meta.allowed_tools) | DISCOVERY_TOOLS
    declared = [s.meta.allowed_tools for s in active if s.meta.allowed_tools is not None]
    if not declared:
        return None
    return frozenset(name for tools in declared for name in tools) | DISCOVERY_TOOLS


def binding_skills(active: list[Skill], slash: Skill | None) -> list[Skill]:
    """The active skills whose declared secrets bind: the one the user started with
    ``/name`` always; one the agent loaded by itself only unless it says
    ``secrets-autonomous: false`` (DeerFlow's opt-out: such a skill's secrets need the user's
    explicit start)."""
    return [s for s in active if s is slash or s.meta.secrets_autonomous]


def bound_secrets(active: list[Skill], request_secrets: Mapping[str, str], slash: Skill | None = None) -> dict[str, str]:
    """Only the secrets the binding skills declare, and only the values the request brought."""
    wanted = {req.name for skill in binding_skills(active, slash) for req in skill.meta.required_secrets}
    return {name: value for name, value in request_secrets.items() if name in wanted}


def missing_secrets(active: list[Skill], request_secrets: Mapping[str, str], slash: Skill | None = None) -> dict[str, list[str]]:
    """Skill name -> the required (not optional) secret names the request did not bring. Names
    only: this goes to the run's journal."""
    out: dict[str, list[str]] = {}
    for skill in binding_skills(active, slash):
        names = [r.name for r in skill.meta.required_secrets if not r.optional and r.name not in request_secrets]
        if names:
            out[skill.name] = names
    return out


# -- the journal: what a run activated, and which secrets it bound or missed ---------------

_audits: OrderedDict[str, dict[str, Any]] = OrderedDict()


def audit_changes(run_id: str, active: list[Skill], slash: Skill | None,
                  request_secrets: Mapping[str, str]) -> tuple[list[dict[str, str]], dict[str, Any] | None]:
    """(activations not recorded yet in this run, the secret binding if it changed).

    Called on every model and tool call the skills middleware sees; each skill's activation
    is reported once per run and the binding only when it differs from the last one
    reported, so the journal gets one row per change, not one per call. Names only.
    """
    with _snap_lock:
        record = _audits.setdefault(run_id, {"activated": set(), "binding": None})
        _audits.move_to_end(run_id)
        while len(_audits) > _MAX_SNAPSHOTS:
            _audits.popitem(last=False)
        fresh = [s for s in active if s.name not in record["activated"]]
        record["activated"].update(s.name for s in fresh)
    activations = [{"skill_name": s.name, "category": s.category, "path": s.skill_md_path,
                    "source": "slash" if s is slash else "read"} for s in fresh]
    binding = binding_skills(active, slash)
    declaring = [s for s in binding if s.meta.required_secrets]
    withheld = {s.name: [r.name for r in s.meta.required_secrets] for s in active
                if s not in binding and s.meta.required_secrets}
    state = {"skills": sorted(s.name for s in declaring),
             "secrets": sorted(bound_secrets(active, request_secrets, slash)),
             "missing": missing_secrets(active, request_secrets, slash),
             "withheld": withheld}
    if not (state["secrets"] or state["missing"] or state["withheld"]):
        return activations, None
    with _snap_lock:
        if record["binding"] == state:
            return activations, None
        record["binding"] = state
    return activations, {**state, "message": secrets_message(state)}


def secrets_message(state: Mapping[str, Any]) -> str:
    parts = []
    for skill, names in sorted(state["missing"].items()):
        parts.append(f"The skill {skill} needs the secret{'s' if len(names) > 1 else ''} {', '.join(names)}, "
                     "which this run's request did not bring (context.secrets); its commands run without "
                     f"{'them' if len(names) > 1 else 'it'}.")
    for skill, names in sorted(state["withheld"].items()):
        parts.append(f"The skill {skill} was loaded by the agent and says secrets-autonomous: false, so "
                     f"{', '.join(names)} {'are' if len(names) > 1 else 'is'} bound only when the user starts it with /{skill}.")
    if state["secrets"]:
        parts.append(f"Bound for this run's commands: {', '.join(state['secrets'])}.")
    return " ".join(parts)


# -- the prompt block ---------------------------------------------------------------------

_block_cache: OrderedDict[tuple, str] = OrderedDict()


def skills_prompt_block(skills: list[Skill], *, deferred: bool = False) -> str:
    """The system-prompt section listing enabled skills. Built only from the set (names,
    descriptions, paths), never from the turn, so it is byte-identical while the set is."""
    if not skills:
        return ""
    key = (deferred, tuple((s.name, s.meta.description, s.skill_md_path) for s in skills))
    with _snap_lock:
        hit = _block_cache.get(key)
    if hit is not None:
        return hit
    head = (
        "\n## Skills\n"
        "Skills are folders of instructions, scripts and references for particular jobs. When a task matches a skill, "
        "read its SKILL.md with `read_file` before you start and follow it; run its scripts from their skill folder "
        "(read-only) and write results to /mnt/user-data/outputs. The user can also start a skill with `/skill-name`.\n"
    )
    if deferred:
        body = ("Call `describe_skill` with a query to see a skill's description and path. Enabled skills: "
                + ", ".join(s.name for s in skills) + "\n")
    else:
        lines = []
        for s in skills:
            desc = s.meta.description if len(s.meta.description) <= MAX_PROMPT_DESCRIPTION else s.meta.description[:MAX_PROMPT_DESCRIPTION] + "…"
            lines.append(f"- {s.name}: {desc} ({s.skill_md_path})")
        body = "<skills>\n" + "\n".join(lines) + "\n</skills>\n"
    block = head + body
    with _snap_lock:
        _block_cache[key] = block
        while len(_block_cache) > 256:
            _block_cache.popitem(last=False)
    return block


def search_skills(skills: list[Skill], query: str, limit: int = 5) -> list[Skill]:
    """``select:a,b`` exact names (all of them), ``+prefix``, or words matched against
    names and descriptions (at most ``limit``)."""
    query = (query or "").strip()
    if query.startswith("select:"):
        wanted = [n.strip() for n in query[len("select:"):].split(",") if n.strip()]
        by_name = {s.name: s for s in skills}
        return [by_name[n] for n in wanted if n in by_name]
    if query.startswith("+"):
        return [s for s in skills if s.name.startswith(query[1:].strip().lower())][:limit]
    words = [w for w in re.split(r"\W+", query.lower()) if w]
    scored = []
    for s in skills:
        text = f"{s.name} {s.meta.description}".lower()
        score = sum(1 for w in words if w in text)
        if score or not words:
            scored.append((-score, s.name, s))
    return [s for _, _, s in sorted(scored)][:limit]
