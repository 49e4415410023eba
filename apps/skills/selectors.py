"""Reads: a user's skills as the Skills page and the API show them."""

from __future__ import annotations

from django.db.models import Q

from apps.errors import NotFound
from apps.skills.models import SkillRevision, SkillState
from harness.config import get_app_config
from harness.skills.install import list_versions
from harness.skills.loader import CUSTOM, GLOBAL, Skill, global_skills_home, load_global_skills, load_public_skills
from harness.skills.state import SkillEntry, SkillSet, resolve_skill_set, skill_content, skill_json


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


def _review_rows(*, owner_id, names: list[str]) -> dict[tuple[bool, str], SkillState]:
    """(is the row everyone's, name) -> the rows that carry install-scan findings."""
    owner = Q(owner__isnull=True) | (Q(owner_id=owner_id) if owner_id else Q(pk__in=[]))
    rows = SkillState.objects.filter(owner, name__in=names).exclude(findings=[])
    return {(row.owner_id is None, row.name): row for row in rows}


def _review_of(rows: dict, skill: Skill) -> SkillState | None:
    """The row that speaks for this skill: everyone's for a global skill, the user's own for
    a custom one (public skills are never installed, so never held)."""
    if skill.category == GLOBAL:
        return rows.get((True, skill.name))
    if skill.category == CUSTOM:
        return rows.get((False, skill.name))
    return None


def skill_reviews(*, owner_id: str, skills: list[Skill]) -> dict[str, tuple[bool, list]]:
    """name -> (held, findings) for those of *skills* whose install scan left findings, as
    the owner sees them (the skill-state port's ``reviews``, which the embedded client reads)."""
    rows = _review_rows(owner_id=int(owner_id) if str(owner_id).isdigit() else None, names=[s.name for s in skills])
    found = {s.name: _review_of(rows, s) for s in skills}
    return {name: (bool(row.held), list(row.findings)) for name, row in found.items() if row is not None}


def held_state(*, user, name: str, category: str) -> SkillState | None:
    """The hold row keeping this skill off, if its install scan held it."""
    if category == GLOBAL:
        return SkillState.objects.filter(owner__isnull=True, name=name, held=True).first()
    if category == CUSTOM:
        return SkillState.objects.filter(owner=user, name=name, held=True).first()
    return None


def skill_to_dict(entry: SkillEntry, *, user=None, review: SkillState | None = None) -> dict:
    return skill_json(entry, editable=skill_editable(entry.skill, user=user), held=bool(review is not None and review.held),
                      findings=list(review.findings) if review is not None else [])


def skill_list(*, user) -> list[dict]:
    entries = skill_set_for_user(user=user).entries
    rows = _review_rows(owner_id=getattr(user, "pk", None), names=[e.skill.name for e in entries])
    return [skill_to_dict(e, user=user, review=_review_of(rows, e.skill)) for e in entries]


def skill_dict_for_user(*, user, name: str) -> dict:
    entry = skill_get_for_user(user=user, name=name)
    rows = _review_rows(owner_id=getattr(user, "pk", None), names=[name])
    return skill_to_dict(entry, user=user, review=_review_of(rows, entry.skill))


def skill_get_for_user(*, user, name: str) -> SkillEntry:
    """The user's view of one skill; another user's custom skill is simply not there."""
    entry = skill_set_for_user(user=user).get(name)
    if entry is None:
        raise NotFound(f"No skill named {name!r}")
    return entry


def skill_detail(*, user, name: str) -> dict:
    entry = skill_get_for_user(user=user, name=name)
    content = skill_content(entry.skill)
    category = entry.skill.category
    if category == CUSTOM:
        versions = list_versions(user_id=str(user.pk), name=name)
    elif category == GLOBAL and can_manage_global(user):
        versions = list_versions(user_id=None, name=name, home=global_skills_home())
    else:  # public, or a global skill a non-admin cannot roll back anyway
        versions = []
    review = _review_of(_review_rows(owner_id=getattr(user, "pk", None), names=[name]), entry.skill)
    history = skill_history(user=user, name=name) if category == CUSTOM else []
    return {**skill_to_dict(entry, user=user, review=review), "content": content, "versions": versions, "history": history}


RESTORABLE = (SkillRevision.Action.EDIT, SkillRevision.Action.PATCH, SkillRevision.Action.WRITE_FILE,
              SkillRevision.Action.REMOVE_FILE, SkillRevision.Action.RESTORE)
HISTORY_LIMIT = 50


def skill_history(*, user, name: str) -> list[dict]:
    """The agent's changes to one of the user's own skills, newest first (``skill_manage``)."""
    rows = SkillRevision.objects.filter(owner=user, name=name)[:HISTORY_LIMIT]
    return [{"id": r.pk, "action": r.action, "action_display": r.get_action_display(), "file_path": r.file_path,
             "thread_id": r.thread_id or None, "created_at": r.created_at.isoformat(),
             "prev_content": r.prev_content, "new_content": r.new_content, "moderation": r.moderation,
             "restorable": r.action in RESTORABLE} for r in rows]


def skill_revision_get_for_user(*, user, name: str, revision_id: int) -> SkillRevision:
    """A revision of the user's own skill; another user's answers not-found."""
    row = SkillRevision.objects.filter(owner=user, name=name, pk=revision_id).first()
    if row is None:
        raise NotFound(f"No change {revision_id} in the history of {name!r}")
    return row
