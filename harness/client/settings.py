"""Models, MCP servers and skills, answered as ``/api/models``, ``/api/mcp/config`` and
``/api/skills`` answer.

MCP settings are ``extensions_config.json`` (``DEER_FLOW_EXTENSIONS_CONFIG_PATH``): the same
file the server reads. Skill on/off choices go through the skill-state port the process has
registered (the server's database under ``server_client``; in memory otherwise), which is
also what the agent reads, so a choice made here shows in the next turn's prompt.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.errors import Conflict, NotFound
from harness.mcp.settings import mcp_config_get, mcp_config_replace, mcp_server_toggle
from harness.models import api_model_entry
from harness.skills.install import install_archive, install_json, list_versions
from harness.skills.loader import CUSTOM, GLOBAL, global_skills_home, load_global_skills, load_public_skills
from harness.skills.manage import get_skill_history_store
from harness.skills.state import SkillEntry, SkillSet, get_skill_state_store, resolve_skill_set, skill_content, skill_json


class SettingsMixin:
    # -- models ------------------------------------------------------------------------------

    def list_models(self) -> dict[str, Any]:
        """As ``GET /api/models``; ``probe`` is None here (the server keeps the probes)."""
        return {"models": [api_model_entry(m) for m in self.app_config.models], "token_usage": {"enabled": True}}

    def get_model(self, name: str) -> dict[str, Any]:
        entry = self.app_config.get_model(name)
        if entry is None:
            raise NotFound(f"Model '{name}' not found")
        return api_model_entry(entry)

    # -- MCP ---------------------------------------------------------------------------------

    def get_mcp_config(self) -> dict[str, Any]:
        """``{"mcp_servers": {name: settings}}``, secrets masked."""
        return mcp_config_get()

    def update_mcp_config(self, mcp_servers: dict[str, dict]) -> dict[str, Any]:
        """Replace the servers (a masked secret sent back unchanged keeps its stored value)."""
        result = mcp_config_replace(data={"mcp_servers": mcp_servers})
        self.reset_agent()
        return result

    def set_mcp_server_enabled(self, server_name: str, enabled: bool) -> dict[str, Any]:
        result = mcp_server_toggle(data={"server_name": server_name, "enabled": enabled})
        self.reset_agent()
        return result

    # -- skills ------------------------------------------------------------------------------

    def _skill_set(self) -> SkillSet:
        cfg = self.app_config.skills
        return resolve_skill_set(self.user_id, skills_path=cfg.path, virtual=cfg.container_path)

    def _skill_entry(self, name: str) -> SkillEntry:
        entry = self._skill_set().get(name)
        if entry is None:
            raise NotFound(f"No skill named {name!r}")
        return entry

    def _reviews(self, entries: list[SkillEntry]) -> dict[str, tuple[bool, list]]:
        reviews = getattr(get_skill_state_store(), "reviews", None)
        return reviews(self.user_id, [e.skill for e in entries]) if reviews is not None else {}

    def _skill_json(self, entry: SkillEntry, reviews: dict[str, tuple[bool, list]]) -> dict[str, Any]:
        held, findings = reviews.get(entry.skill.name, (False, []))
        editable = entry.skill.category == CUSTOM or (entry.skill.category == GLOBAL and self.is_admin)
        return skill_json(entry, editable=editable, held=held, findings=findings)

    def list_skills(self, enabled_only: bool = False) -> dict[str, Any]:
        entries = [e for e in self._skill_set().entries if e.enabled or not enabled_only]
        reviews = self._reviews(entries)
        return {"skills": [self._skill_json(e, reviews) for e in entries]}

    def get_skill(self, name: str) -> dict[str, Any]:
        """One skill with its SKILL.md (``content``), the versions that can be rolled back to and,
        for the user's own, the agent's changes (``skill_manage``)."""
        entry = self._skill_entry(name)
        category = entry.skill.category
        history: list[dict] = []
        if category == CUSTOM:
            versions = list_versions(user_id=self.user_id, name=name)
            history = get_skill_history_store().history(self.user_id, name)
        elif category == GLOBAL and self.is_admin:
            versions = list_versions(user_id=None, name=name, home=global_skills_home())
        else:
            versions = []
        return {**self._skill_json(entry, self._reviews([entry])), "content": skill_content(entry.skill), "versions": versions,
                "history": history}

    def update_skill(self, name: str, *, enabled: bool) -> dict[str, Any]:
        """Turn a skill on or off for this user. A skill its install scan held stays off here:
        its findings are read and acknowledged on the server's Skills page."""
        entry = self._skill_entry(name)
        held, findings = self._reviews([entry]).get(name, (False, []))
        if enabled and held:
            raise Conflict(f"'{name}' was kept off by its install scan ({len(findings)} finding(s)); "
                           "read them on the Skills page and turn it on there if you trust it")
        get_skill_state_store().set_enabled(self.user_id, name, bool(enabled))
        self.reset_agent()
        return self._skill_json(self._skill_entry(name), self._reviews([entry]))

    def install_skill(self, skill_path: str | os.PathLike) -> dict[str, Any]:
        """Install a ``.skill`` archive (ZIP) as one of this user's own skills, through the same
        scan as the server's install; a refusal raises ``SkillInstallError`` with the findings."""
        path = Path(skill_path)
        if not path.is_file():
            raise FileNotFoundError(f"No file at {path}")
        cfg = self.app_config.skills
        result = install_archive(path, user_id=self.user_id, public_names={s.name for s in load_public_skills(cfg.path, cfg.container_path)},
                                 global_names={s.name for s in load_global_skills(cfg.container_path)},
                                 content=self.app_config.skill_scan.enabled)
        forget = getattr(get_skill_state_store(), "forget", None)
        if forget is not None:
            forget(self.user_id, result.name)
        self.reset_agent()
        return install_json(result, scope="user", held=[])
