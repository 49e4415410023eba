"""Writes: turning skills on and off, installing, rolling back, deleting.

The install itself (scan, atomic unpack, versions) is the harness's; this layer finds the
archive (an upload or a file in one of the user's threads), checks ownership and maps the
harness's refusals onto the API's errors.

Scopes: ``user`` (default) installs into the caller's own custom skills; ``global`` installs
for everyone and is for admins in a signed-in session only (a global skill reaches every
user's agent, so a leaked token must not be able to plant one). Every global change is
recorded as a ``GlobalSkillChange`` row.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from apps.errors import Conflict, Forbidden, InvalidRequest, NotFound
from apps.skills.models import GlobalSkillChange, SkillRevision, SkillState
from apps.skills.selectors import (
    RESTORABLE,
    can_manage_global,
    global_skill_names,
    held_state,
    public_skill_names,
    skill_get_for_user,
    skill_revision_get_for_user,
)
from harness.config import deer_flow_home, get_app_config, thread_user_data_dir
from harness.sandbox.errors import SandboxPathError
from harness.sandbox.paths import VirtualFS
from harness.skills.archive import MAX_ARCHIVE_BYTES, WARNING, Finding, holding_findings
from harness.skills.install import InstallResult, SkillInstallError, delete_custom, install_archive, rollback
from harness.skills.manage import SKILL_MD, SkillChangeRefused, commit_change, prepare_change
from harness.skills.review import review_directory
from harness.skills.loader import CUSTOM, GLOBAL, PUBLIC, global_root, global_skills_home, user_skills_home
from harness.skills.parser import NAME_PATTERN

USER_SCOPE, GLOBAL_SCOPE = "user", "global"


class SkillRefused(InvalidRequest):
    """An install the scan refused; the view shows the findings."""

    def __init__(self, detail: str, findings: list):
        super().__init__(detail)
        self.findings = findings


class SkillHeld(Conflict):
    """Turning on a skill its install scan held, without saying the findings were read."""

    def __init__(self, detail: str, findings: list):
        super().__init__(detail)
        self.findings = findings


def skill_set_enabled(*, user, name: str, enabled: bool, acknowledge_findings: bool = False, via_token: bool = False) -> None:
    """A held skill turns on only with ``acknowledge_findings`` (the person has seen why it
    was held); that lifts the hold and keeps the findings on the row for later readers. A
    global skill's hold is lifted by an admin in a signed-in session, like its install."""
    entry = skill_get_for_user(user=user, name=name)
    hold = held_state(user=user, name=name, category=entry.skill.category)
    if enabled and hold is not None:
        if not acknowledge_findings:
            raise SkillHeld(f"'{name}' was kept off by its install scan: {_hold_reason(hold.findings)}. "
                            "Read the findings, then turn it on with acknowledge_findings if you trust it.", hold.findings)
        if hold.owner_id is None:
            _require_global_admin(user=user, via_token=via_token)
        with transaction.atomic():
            hold.held = False
            hold.enabled = True
            hold.save(update_fields=["held", "enabled", "updated_at"])
            if hold.owner_id is None:
                return
    SkillState.objects.update_or_create(owner=user, name=name, defaults={"enabled": bool(enabled)})


def _hold_reason(findings: list, limit: int = 3) -> str:
    parts = [f"{f.get('file')}{':' + str(f['line']) if f.get('line') else ''} {f.get('message')} ({f.get('rule')})"
             for f in findings[:limit]]
    more = f" and {len(findings) - limit} more" if len(findings) > limit else ""
    return "; ".join(parts) + more


def check_install_scope(*, user, scope, via_token: bool) -> str:
    """The scope an install (or a rollback/delete naming one) acts in; refusals name why."""
    if scope in (None, ""):
        return USER_SCOPE
    if scope not in (USER_SCOPE, GLOBAL_SCOPE):
        raise InvalidRequest("scope must be 'user' (your own skills) or 'global' (every user's; admins only)")
    if scope == GLOBAL_SCOPE:
        _require_global_admin(user=user, via_token=via_token)
    return scope


def _require_global_admin(*, user, via_token: bool) -> None:
    if not can_manage_global(user):
        raise Forbidden("only an admin can install, roll back or delete skills for everyone; "
                        "install it for yourself instead (leave out scope)")
    if via_token:
        raise Forbidden("skills for everyone are managed from an admin's signed-in session; "
                        "personal access tokens cannot do it")


def users_with_own_skill(name: str) -> list[int]:
    """Ids of users who have a custom skill of this name (theirs wins over a global one)."""
    if not NAME_PATTERN.match(name):
        return []
    ids = []
    for skill_md in (deer_flow_home() / "users").glob(f"*/skills/{CUSTOM}/{name}/SKILL.md"):
        user_dir = skill_md.parents[3].name
        if user_dir.isdigit():
            ids.append(int(user_dir))
    return sorted(ids)


def _record(*, name: str, action: str, version: str | None, actor, findings: list | None = None) -> None:
    GlobalSkillChange.objects.create(name=name, action=action, version=version or "", actor=actor,
                                     findings=findings or [])


@dataclass
class Installed:
    result: InstallResult
    held: list[dict]  # the findings that keep it off (empty: it is on)


def _install(path: Path, *, user, scope: str = USER_SCOPE, agent_written: bool = False) -> Installed:
    """``agent_written``: the archive came from a thread's files, so the agent wrote it; its
    high findings keep it off until a person turns it on (an upload is the person's own pick)."""
    public = public_skill_names()
    content = get_app_config().skill_scan.enabled
    try:
        if scope == GLOBAL_SCOPE:
            result = install_archive(path, user_id=None, public_names=public, home=global_skills_home(), live_dir=GLOBAL,
                                     content=content)
        else:
            result = install_archive(path, user_id=str(user.pk), public_names=public, global_names=global_skill_names(),
                                     content=content)
    except SkillInstallError as exc:
        raise SkillRefused(exc.message, [f.to_dict() for f in exc.findings]) from None
    held = [f.to_dict() for f in holding_findings(result.findings)] if agent_written else []
    if scope == GLOBAL_SCOPE:
        shadowed = users_with_own_skill(result.name)
        if shadowed:
            result.findings.append(Finding(
                "name.shadowed", WARNING, f"{result.name}/SKILL.md", None,
                f"{len(shadowed)} user(s) have a skill of their own named '{result.name}'; theirs stays in use for them"))
        if held:
            _hold(owner=None, name=result.name, findings=held)
        elif not result.replaced or _is_held(owner=None, name=result.name):
            # A first install starts on for everyone, whatever an earlier skill of that name
            # left; a clean version replaces a held one and starts on too.
            SkillState.objects.filter(owner__isnull=True, name=result.name).delete()
        _record(name=result.name, action=GlobalSkillChange.Action.UPDATE if result.replaced else GlobalSkillChange.Action.INSTALL,
                version=result.version, actor=user, findings=[f.to_dict() for f in result.findings])
    elif held:
        _hold(owner=user, name=result.name, findings=held)
    else:
        # A reinstall after a delete starts enabled again, like a first install.
        SkillState.objects.filter(owner=user, name=result.name).delete()
    return Installed(result, held)


def _is_held(*, owner, name: str) -> bool:
    return SkillState.objects.filter(owner=owner, name=name, held=True).exists()


def _hold(*, owner, name: str, findings: list) -> None:
    SkillState.objects.update_or_create(owner=owner, name=name,
                                        defaults={"enabled": False, "held": True, "findings": findings})


def _too_large(file: str) -> SkillRefused:
    message = f"the archive is larger than {MAX_ARCHIVE_BYTES // (1024 * 1024)} MB"
    return SkillRefused(f"the archive was refused by the scan: {file}: {message}", [{
        "rule": "archive.too_large", "severity": "critical", "file": file, "line": None, "message": message}])


def skill_install_upload(*, user, upload, scope: str = USER_SCOPE) -> Installed:
    if upload.size > MAX_ARCHIVE_BYTES:
        raise _too_large(upload.name)
    fd, tmp = tempfile.mkstemp(suffix=".skill")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        return _install(Path(tmp), user=user, scope=scope)
    finally:
        Path(tmp).unlink(missing_ok=True)


def skill_install_from_thread(*, user, thread_id: str, path: str, scope: str = USER_SCOPE) -> Installed:
    from apps.threads.selectors import thread_get_for_user

    thread = thread_get_for_user(user=user, thread_id=thread_id)
    fs = VirtualFS(thread_user_data_dir(thread.owner_id, thread.pk), skills_dir=None)
    try:
        resolved = fs.resolve(path)
    except SandboxPathError as exc:
        raise InvalidRequest(str(exc).removeprefix("Error: ")) from None
    if not resolved.real.is_file():
        raise NotFound(f"No file at {resolved.virtual}")
    # Copy first: the agent may rewrite the file while it is being scanned and unpacked.
    fd, tmp = tempfile.mkstemp(suffix=".skill")
    os.close(fd)
    try:
        with open(resolved.real, "rb") as src, open(tmp, "wb") as dst:
            copied = 0  # counted as read: the file may grow while it is copied
            while chunk := src.read(65536):
                copied += len(chunk)
                if copied > MAX_ARCHIVE_BYTES:
                    raise _too_large(resolved.virtual)
                dst.write(chunk)
        return _install(Path(tmp), user=user, scope=scope, agent_written=True)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _target(*, user, name: str, scope: str | None, via_token: bool) -> str:
    """The category a rollback or delete acts on: the skill the user sees, or with
    ``scope='global'`` the global one (an admin whose own skill shadows it still reaches it)."""
    if check_install_scope(user=user, scope=scope, via_token=via_token) == GLOBAL_SCOPE:
        if not NAME_PATTERN.match(name) or not (global_root() / name / "SKILL.md").is_file():
            raise NotFound(f"No skill named {name!r} is installed for everyone")
        return GLOBAL
    category = skill_get_for_user(user=user, name=name).skill.category
    if category == GLOBAL:
        _require_global_admin(user=user, via_token=via_token)
    return category


def skill_rollback(*, user, name: str, version_id: str | None = None, scope: str | None = None,
                   via_token: bool = False) -> str | None:
    category = _target(user=user, name=name, scope=scope, via_token=via_token)
    if category == PUBLIC:
        raise Forbidden("public skills have no versions to roll back to")
    owner = None if category == GLOBAL else user
    try:
        if category == GLOBAL:
            version = rollback(user_id=None, name=name, version_id=version_id, home=global_skills_home(), live_dir=GLOBAL)
            _record(name=name, action=GlobalSkillChange.Action.ROLLBACK, version=version, actor=user)
            live = global_skills_home() / GLOBAL / name
        else:
            version = rollback(user_id=str(user.pk), name=name, version_id=version_id)
            live = user_skills_home(str(user.pk)) / CUSTOM / name
    except SkillInstallError as exc:
        raise InvalidRequest(exc.message) from None
    if _is_held(owner=owner, name=name) and not holding_findings(review_directory(live, subject=name).findings):
        # The hold was on the version rolled away from; the one back in place reads clean.
        SkillState.objects.filter(owner=owner, name=name).delete()
    return version


def skill_delete(*, user, name: str, scope: str | None = None, via_token: bool = False) -> None:
    category = _target(user=user, name=name, scope=scope, via_token=via_token)
    if category == PUBLIC:
        raise Forbidden("public skills cannot be deleted; turn the skill off instead")
    if category == GLOBAL:
        delete_custom(user_id=None, name=name, home=global_skills_home(), live_dir=GLOBAL)
        # Choices about the global skill go with it; a user's choice about a skill of their
        # own with the same name stays.
        SkillState.objects.filter(name=name).exclude(owner_id__in=users_with_own_skill(name)).delete()
        _record(name=name, action=GlobalSkillChange.Action.DELETE, version=None, actor=user)
        return
    delete_custom(user_id=str(user.pk), name=name)
    SkillState.objects.filter(owner=user, name=name).delete()


def skill_revision_restore(*, user, name: str, revision_id: int) -> SkillRevision:
    """Put back the file one of the agent's changes replaced (the text from before it), through
    the same scan as the agent's writes; the restore is itself a history row, so it can be undone."""
    if skill_get_for_user(user=user, name=name).skill.category != CUSTOM:
        raise Forbidden("only your own skills have a history to restore from")
    row = skill_revision_get_for_user(user=user, name=name, revision_id=revision_id)
    if row.action not in RESTORABLE:
        raise InvalidRequest(f"a '{row.get_action_display()}' change has no earlier text to restore; "
                             "delete the skill or roll it back instead")
    if row.file_path == SKILL_MD:
        action, path = "edit", None
    else:
        action, path = ("write_file" if row.prev_content is not None else "remove_file"), row.file_path
    try:
        candidate = prepare_change(user_id=str(user.pk), name=name, action=action, content=row.prev_content, path=path,
                                   public_names=public_skill_names(), content_rules=get_app_config().skill_scan.enabled)
    except SkillChangeRefused as exc:
        raise SkillRefused(f"the restore was refused: {exc.message}", [f.to_dict() for f in exc.findings]) from None
    commit_change(candidate)
    return SkillRevision.objects.create(owner=user, name=name, action=SkillRevision.Action.RESTORE, file_path=row.file_path,
                                        prev_content=candidate.prev_content, new_content=candidate.new_content,
                                        findings=[f.to_dict() for f in candidate.findings])
