"""Reads: a user's skills as the Skills page and the API show them."""

from __future__ import annotations

from harness.config import get_app_config
from harness.skills.install import list_versions
from harness.skills.loader import CUSTOM, GLOBAL, Skill, global_skills_home, load_global_skills, load_public_skills
from harness.skills.state import SkillEntry, SkillSet, resolve_skill_set

from apps.errors import NotFound


def skill_set_for_user(*, user) -> SkillSet:
    cfg = get_app_config().skills
    return resolve_skill_set(str(user.pk), skills_path=cfg.path, virtual=cfg.container_path)


def public_skill_names() -> set[str]:
    cfg = get_app_config().skills
    return {s.name for s in load_public_skills(cfg.path, cfg.container_path)}


def global_skill_names() -> set[str]:
    cfg = get_app_config().skills
    return {s.name for s in load_global_skills(cfg.container_path)}


def can_manage_global(user) -> bool:
    """Installing, rolling back and deleting skills for everyone is for admins (staff)."""
    return bool(getattr(user, "is_staff", False))


def skill_editable(skill: Skill, *, user) -> bool:
    """Whether this user may replace, roll back or delete the skill (not only toggle it)."""
    return skill.category == CUSTOM or (skill.category == GLOBAL and can_manage_global(user))


def skill_to_dict(entry: SkillEntry, *, user=None) -> dict:
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
        "editable": skill_editable(skill, user=user),
        "container_path": skill.container_path,
        "allowed_tools": list(meta.allowed_tools) if meta.allowed_tools is not None else None,
        "required_secrets": [s.name for s in meta.required_secrets],
    }


def skill_list(*, user) -> list[dict]:
    return [skill_to_dict(e, user=user) for e in skill_set_for_user(user=user).entries]


def skill_get_for_user(*, user, name: str) -> SkillEntry:
    """The user's view of one skill; another user's custom skill is simply not there."""
    entry = skill_set_for_user(user=user).get(name)
    if entry is None:
        raise NotFound(f"No skill named {name!r}")
    return entry


def skill_detail(*, user, name: str) -> dict:
    entry = skill_get_for_user(user=user, name=name)
    try:
        content = (entry.skill.directory / "SKILL.md").read_text(encoding="utf-8")
    except OSError:
        content = ""
    category = entry.skill.category
    if category == CUSTOM:
        versions = list_versions(user_id=str(user.pk), name=name)
    elif category == GLOBAL and can_manage_global(user):
        versions = list_versions(user_id=None, name=name, home=global_skills_home())
    else:  # public, or a global skill a non-admin cannot roll back anyway
        versions = []
    return {**skill_to_dict(entry, user=user), "content": content, "versions": versions}
