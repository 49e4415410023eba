"""Installing a scanned ``.skill`` archive into a user's custom skills (or, for an admin,
the global skills everyone sees), and rolling back.

Layout under ``users/{id}/skills/`` (a user's) or ``skills/`` (global, in ``DEER_FLOW_HOME``):
``custom/{name}/`` (``global/{name}/``) is what the agent and the sandbox see;
``.versions/{name}/{stamp}/`` holds earlier versions (never mounted); ``.staging-*``
is an install in progress. An install unpacks into staging, and only a complete tree is
renamed into place (one ``rename`` on one filesystem), after the live version has been moved
to ``.versions``: a reader sees the old skill or the new one, never half of either. A
refused or failed install removes its staging directory, so nothing is left on disk.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.skills.archive import CRITICAL, MAX_MEMBER_BYTES, MAX_UNCOMPRESSED_BYTES, Finding, scan_archive
from harness.skills.loader import CUSTOM, clear_cache, user_skills_home
from harness.skills.parser import NAME_PATTERN, parse_skill_md
from harness.skills.zipread import MemberRefused, extract_members

KEEP_VERSIONS = 5
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class SkillInstallError(ValueError):
    def __init__(self, message: str, findings: list[Finding] | None = None):
        super().__init__(message)
        self.message = message
        self.findings = findings or []


@dataclass
class InstallResult:
    name: str
    version: str | None
    replaced: bool
    findings: list[Finding] = field(default_factory=list)


def _lock(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _version_dirs(home: Path, name: str) -> list[Path]:
    base = home / ".versions" / name
    if not base.is_dir():
        return []
    return sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.name)


def _retire(home: Path, name: str, live_dir: str = CUSTOM) -> None:
    """Move the live version into .versions (newest last), keeping the last few."""
    live = home / live_dir / name
    if not live.exists():
        return
    base = home / ".versions" / name
    base.mkdir(parents=True, exist_ok=True)
    stamp = f"{time.time_ns():020d}"
    os.rename(live, base / stamp)
    for old in _version_dirs(home, name)[:-KEEP_VERSIONS]:
        shutil.rmtree(old, ignore_errors=True)


def install_archive(archive: Path, *, user_id: str | None, public_names: set[str] | frozenset[str],
                    home: Path | None = None, live_dir: str = CUSTOM,
                    global_names: set[str] | frozenset[str] = frozenset(), content: bool = True) -> InstallResult:
    """Scan, then install. Blocking: call it off the event loop.

    ``global_names``: skills installed for everyone. A user may not start a new skill under
    one of those names (it would hide the shared one from them without saying so), but may
    keep updating a skill of their own that was there first. ``content`` False
    (``skill_scan.enabled: false``) skips the content and code rules, never the structural ones.
    """
    home = home or user_skills_home(str(user_id))
    size = archive.stat().st_size
    result = scan_archive(archive, public_names=public_names, archive_size=size, content=content)
    if result.meta is not None and result.meta.name in global_names and not (home / live_dir / result.meta.name).exists():
        result.add("name.clash_global", CRITICAL, f"{result.prefix}SKILL.md",
                   f"'{result.meta.name}' is the name of a skill installed for everyone; choose another name", 2)
    if result.blocked or result.meta is None:
        raise SkillInstallError(f"the archive was refused by the scan: {result.reason()}", result.findings)
    name = result.meta.name
    (home / live_dir).mkdir(parents=True, exist_ok=True)
    with _lock(f"{home}:{name}"):
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=home))
        try:
            tree = staging / name
            tree.mkdir()
            try:
                with zipfile.ZipFile(archive) as zf:
                    extract_members(zf, result.files, prefix=result.prefix, target=tree,
                                    max_member_bytes=MAX_MEMBER_BYTES, max_total_bytes=MAX_UNCOMPRESSED_BYTES)
            except MemberRefused as exc:
                # The staging tree goes in the finally below: nothing of it stays.
                finding = Finding(exc.rule, CRITICAL, exc.file, None, exc.message)
                raise SkillInstallError(f"the archive was refused while unpacking: {exc}",
                                        [*result.findings, finding]) from None
            replaced = (home / live_dir / name).exists()
            _retire(home, name, live_dir)
            os.rename(tree, home / live_dir / name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    clear_cache()
    return InstallResult(name, result.meta.version, replaced, result.findings)


def _meta_of(directory: Path):
    try:
        return parse_skill_md((directory / "SKILL.md").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def list_versions(*, user_id: str | None, name: str, home: Path | None = None) -> list[dict]:
    """Earlier versions, newest first, as {id, version, installed_at}."""
    home = home or user_skills_home(str(user_id))
    if not NAME_PATTERN.match(name):
        return []
    out = []
    for path in reversed(_version_dirs(home, name)):
        meta = _meta_of(path)
        out.append({"id": path.name, "version": meta.version if meta else None,
                    "installed_at": int(path.stat().st_mtime)})
    return out


def rollback(*, user_id: str | None, name: str, version_id: str | None = None, home: Path | None = None,
             live_dir: str = CUSTOM) -> str | None:
    """Put an earlier version (the newest, or ``version_id``) back in place; the version it
    replaces becomes the newest earlier one, so a rollback can itself be undone."""
    home = home or user_skills_home(str(user_id))
    if not NAME_PATTERN.match(name):
        raise SkillInstallError(f"no skill named {name!r}")
    with _lock(f"{home}:{name}"):
        versions = _version_dirs(home, name)
        chosen = next((v for v in versions if v.name == version_id), None) if version_id else (versions[-1] if versions else None)
        if chosen is None:
            raise SkillInstallError(f"{name} has no earlier version to roll back to")
        holding = home / f".rollback-{time.time_ns()}"
        os.rename(chosen, holding)
        _retire(home, name, live_dir)
        os.rename(holding, home / live_dir / name)
    clear_cache()
    meta = _meta_of(home / live_dir / name)
    return meta.version if meta else None


def delete_custom(*, user_id: str | None, name: str, home: Path | None = None, live_dir: str = CUSTOM) -> bool:
    home = home or user_skills_home(str(user_id))
    if not NAME_PATTERN.match(name):
        return False
    live = home / live_dir / name
    if not live.is_dir():
        return False
    with _lock(f"{home}:{name}"):
        trash = home / f".deleting-{time.time_ns()}"
        os.rename(live, trash)
        shutil.rmtree(trash, ignore_errors=True)
        shutil.rmtree(home / ".versions" / name, ignore_errors=True)
    clear_cache()
    return True


def install_json(result: InstallResult, *, scope: str, held: list[dict]) -> dict:
    """What an install answers (the API's ``POST /skills/install``, the client's
    ``install_skill``); ``held``: the findings that keep an agent-written skill off."""
    verb = "updated" if result.replaced else "installed"
    message = f"Skill '{result.name}' {verb}{' for everyone' if scope == 'global' else ''}."
    if held:
        message = (f"Skill '{result.name}' {verb}, but kept off: the agent wrote it and the scan found "
                   f"{len(held)} thing(s) to check first. Read the findings; turn it on only if you trust it.")
    return {
        "success": True, "skill_name": result.name, "version": result.version, "replaced": result.replaced,
        "scope": scope, "message": message, "held": bool(held), "findings": [f.to_dict() for f in result.findings],
    }
