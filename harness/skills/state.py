"""Which skills are on, for whom: the store port and the per-run snapshot.

Public skills are on unless the operator turns one off in ``extensions_config.json``
(``skills: {name: {enabled: false}}``) or the user does on the Skills page; a user's own
choice wins. The harness only declares the store; ``apps/skills/stores.py`` keeps the
choices in the database and is installed at startup. The in-memory store serves the embedded
client and tests.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from harness.skills.loader import Skill, load_skills


class SkillStateStore(Protocol):
    """``reviews`` and ``forget`` are optional: a store without them has no install-scan
    holds to report, and a reinstall keeps the user's on/off choice."""

    def enabled_overrides(self, user_id: str) -> dict[str, bool]: ...

    def set_enabled(self, user_id: str, name: str, enabled: bool) -> None: ...


class MemorySkillStateStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, dict[str, bool]] = {}

    def enabled_overrides(self, user_id: str) -> dict[str, bool]:
        with self._lock:
            return dict(self._data.get(str(user_id), {}))

    def set_enabled(self, user_id: str, name: str, enabled: bool) -> None:
        with self._lock:
            self._data.setdefault(str(user_id), {})[name] = bool(enabled)


_store: SkillStateStore = MemorySkillStateStore()


def set_skill_state_store(store: SkillStateStore) -> None:
    global _store
    _store = store


def get_skill_state_store() -> SkillStateStore:
    return _store


@dataclass(frozen=True)
class SkillEntry:
    skill: Skill
    enabled: bool


@dataclass(frozen=True)
class SkillSet:
    """A user's skills as one run sees them: immutable, so every model call in the run
    reads the same set and the prompt block stays byte-identical."""

    entries: tuple[SkillEntry, ...]

    def get(self, name: str) -> SkillEntry | None:
        for entry in self.entries:
            if entry.skill.name == name:
                return entry
        return None

    def enabled(self) -> list[Skill]:
        return [e.skill for e in self.entries if e.enabled]

    def by_skill_md(self, container_path: str) -> Skill | None:
        for skill in self.enabled():
            if skill.skill_md_path == container_path:
                return skill
        return None


def operator_toggles() -> dict[str, bool]:
    from harness.config import get_extensions_config

    try:
        return {name: toggle.enabled for name, toggle in get_extensions_config().skills.items()}
    except Exception:  # a broken file is reported where it is loaded; skills keep their defaults
        return {}


def resolve_skill_set(user_id: str, *, skills_path: str | None = None, virtual: str = "/mnt/skills",
                      store: SkillStateStore | None = None) -> SkillSet:
    """Blocking (stat calls, the store): call it off the event loop."""
    skills = load_skills(str(user_id), skills_path, virtual)
    toggles = operator_toggles()
    overrides = (store or _store).enabled_overrides(str(user_id))
    entries = []
    for skill in skills:
        enabled = toggles.get(skill.name, True)
        enabled = overrides.get(skill.name, enabled)
        entries.append(SkillEntry(skill, enabled))
    return SkillSet(tuple(entries))


def skill_json(entry: SkillEntry, *, editable: bool, held: bool = False, findings: list | None = None) -> dict:
    """One skill as the Skills API and the embedded client list it."""
    skill: Skill = entry.skill
    meta = skill.meta
    return {
        "name": meta.name,
        "description": meta.description,
        "license": meta.license,
        "version": meta.version,
        "author": meta.author,
        "compatibility": meta.compatibility,
        "category": skill.category,
        "enabled": entry.enabled,
        "editable": editable,
        "container_path": skill.container_path,
        "allowed_tools": list(meta.allowed_tools) if meta.allowed_tools is not None else None,
        "required_secrets": [s.name for s in meta.required_secrets],
        "secrets_autonomous": meta.secrets_autonomous,
        # Held: the agent wrote it and its install scan found something high; it stays off
        # until the user turns it on knowing why. The findings stay readable after that.
        "held": held,
        "review_findings": list(findings or []),
    }


def skill_content(skill: Skill) -> str:
    try:
        return (skill.directory / "SKILL.md").read_text(encoding="utf-8")
    except OSError:
        return ""
