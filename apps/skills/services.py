"""Writes: turning skills on and off, installing, rolling back, deleting.

The install itself (scan, atomic unpack, versions) is the harness's; this layer finds the
archive (an upload or a file in one of the user's threads), checks ownership and maps the
harness's refusals onto the API's errors.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from apps.skills.models import SkillState
from apps.skills.selectors import public_skill_names, skill_get_for_user
from deerflow_site.errors import Forbidden, InvalidRequest, NotFound
from harness.config import thread_user_data_dir
from harness.sandbox.errors import SandboxPathError
from harness.sandbox.paths import VirtualFS
from harness.skills.archive import MAX_ARCHIVE_BYTES
from harness.skills.install import InstallResult, SkillInstallError, delete_custom, install_archive, rollback
from harness.skills.loader import PUBLIC


class SkillRefused(InvalidRequest):
    """An install the scan refused; the view shows the findings."""

    def __init__(self, detail: str, findings: list):
        super().__init__(detail)
        self.findings = findings


def skill_set_enabled(*, user, name: str, enabled: bool) -> None:
    skill_get_for_user(user=user, name=name)
    SkillState.objects.update_or_create(owner=user, name=name, defaults={"enabled": bool(enabled)})


def _install(path: Path, *, user) -> InstallResult:
    try:
        result = install_archive(path, user_id=str(user.pk), public_names=public_skill_names())
    except SkillInstallError as exc:
        raise SkillRefused(exc.message, [f.to_dict() for f in exc.findings]) from None
    # A reinstall after a delete starts enabled again, like a first install.
    SkillState.objects.filter(owner=user, name=result.name).delete()
    return result


def skill_install_upload(*, user, upload) -> InstallResult:
    if upload.size > MAX_ARCHIVE_BYTES:
        raise SkillRefused("the archive was refused by the scan", [{
            "rule": "archive.too_large", "severity": "critical", "file": upload.name, "line": None,
            "message": f"the archive is larger than {MAX_ARCHIVE_BYTES // (1024 * 1024)} MB"}])
    fd, tmp = tempfile.mkstemp(suffix=".skill")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        return _install(Path(tmp), user=user)
    finally:
        Path(tmp).unlink(missing_ok=True)


def skill_install_from_thread(*, user, thread_id: str, path: str) -> InstallResult:
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
            shutil.copyfileobj(src, dst, 65536)
            if dst.tell() > MAX_ARCHIVE_BYTES:
                raise SkillRefused("the archive was refused by the scan", [{
                    "rule": "archive.too_large", "severity": "critical", "file": resolved.virtual, "line": None,
                    "message": f"the archive is larger than {MAX_ARCHIVE_BYTES // (1024 * 1024)} MB"}])
        return _install(Path(tmp), user=user)
    finally:
        Path(tmp).unlink(missing_ok=True)


def skill_rollback(*, user, name: str, version_id: str | None = None) -> str | None:
    entry = skill_get_for_user(user=user, name=name)
    if entry.skill.category == PUBLIC:
        raise Forbidden("public skills have no versions to roll back to")
    try:
        return rollback(user_id=str(user.pk), name=name, version_id=version_id)
    except SkillInstallError as exc:
        raise InvalidRequest(exc.message) from None


def skill_delete(*, user, name: str) -> None:
    entry = skill_get_for_user(user=user, name=name)
    if entry.skill.category == PUBLIC:
        raise Forbidden("public skills cannot be deleted; turn the skill off instead")
    delete_custom(user_id=str(user.pk), name=name)
    SkillState.objects.filter(owner=user, name=name).delete()
