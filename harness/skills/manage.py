"""Changes the agent makes to a user's own custom skills (``skill_evolution``, the
``skill_manage`` tool), and the history port that records each one.

A change never edits the live folder in place. It is built on a copy in a staging folder
beside it, the copy goes through the install scan's rules (``review.review_directory``:
structure, front matter, content lines, Python syntax trees), and only a copy with no
critical or high finding is put in place, by the same retire-then-rename as an install
(``install._retire``): the version it replaces is kept under ``.versions`` so the Skills page
can put it back. An agent-written skill is refused rather than held: no person picked it.

Only ``users/{id}/skills/custom`` is written. A public skill's name is never taken, and a new
skill may not take the name of one installed for everyone. Blocking: call off the event loop.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

from harness.skills.archive import CRITICAL, MAX_MEMBER_BYTES, Finding, holding_findings
from harness.skills.install import _lock, _retire
from harness.skills.loader import CUSTOM, clear_cache, user_skills_home
from harness.skills.parser import NAME_PATTERN
from harness.skills.review import review_directory

SKILL_MD = "SKILL.md"
ACTIONS = ("create", "edit", "patch", "write_file", "remove_file", "delete")
# Files the sandbox may run: a moderation model that cannot answer never lets these through.
EXECUTABLE_SUFFIXES = (".py", ".sh", ".bash", ".js", ".ts", ".rb", ".pl")


class SkillChangeRefused(ValueError):
    """A change that was not made; ``findings`` says why when a scan refused it."""

    def __init__(self, message: str, findings: list[Finding] | None = None):
        super().__init__(message)
        self.message = message
        self.findings = findings or []


@dataclass(frozen=True)
class SkillChange:
    """One change, as the history keeps it: who, from which thread, what, before and after."""

    user_id: str
    name: str
    action: str
    file_path: str
    prev_content: str | None
    new_content: str | None
    thread_id: str | None = None
    findings: list[dict] = field(default_factory=list)
    moderation: str = ""


class SkillHistoryStore(Protocol):
    def record(self, change: SkillChange) -> None: ...

    def history(self, user_id: str, name: str) -> list[dict]:
        """The changes to one of the user's skills, newest first, as ``GET /api/skills/{name}``
        lists them."""
        ...


class MemorySkillHistoryStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.changes: list[SkillChange] = []

    def record(self, change: SkillChange) -> None:
        with self._lock:
            self.changes.append(change)

    def history(self, user_id: str, name: str) -> list[dict]:
        # No rows to restore from in a process without the server's database: listed, not restorable.
        with self._lock:
            mine = [(n, c) for n, c in enumerate(self.changes, 1) if c.user_id == str(user_id) and c.name == name]
        return [{"id": n, "action": c.action, "action_display": c.action, "file_path": c.file_path, "thread_id": c.thread_id,
                 "created_at": None, "prev_content": c.prev_content, "new_content": c.new_content,
                 "moderation": c.moderation, "restorable": False} for n, c in reversed(mine)]


_history: SkillHistoryStore = MemorySkillHistoryStore()


def set_skill_history_store(store: SkillHistoryStore) -> None:
    global _history
    _history = store


def get_skill_history_store() -> SkillHistoryStore:
    return _history


@dataclass
class Candidate:
    """A change built in staging and scanned, not yet in place."""

    user_id: str
    name: str
    action: str
    file_path: str
    prev_content: str | None
    new_content: str | None
    staging: Path | None
    findings: list[Finding]
    replacements: int = 0

    @property
    def executable(self) -> bool:
        path = PurePosixPath(self.file_path)
        return path.parts[:1] == ("scripts",) or path.suffix.lower() in EXECUTABLE_SUFFIXES

    def discard(self) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise SkillChangeRefused(f"{path.name} is not UTF-8 text; it cannot be changed with this tool") from None


def _support_path(path: str | None) -> str:
    raw = (path or "").strip().replace("\\", "/")
    rel = PurePosixPath(raw)
    if not raw or rel.is_absolute() or any(p in ("..", "") for p in raw.split("/")) or raw.startswith("./"):
        raise SkillChangeRefused(f"path must be relative inside the skill folder, e.g. references/notes.md (got {path!r})")
    if rel.as_posix() == SKILL_MD:
        raise SkillChangeRefused("SKILL.md is changed with action edit or patch, not write_file or remove_file")
    return rel.as_posix()


def prepare_change(*, user_id: str, name: str, action: str, content: str | None = None, path: str | None = None,
                   find: str | None = None, replace: str | None = None, expected_count: int | None = None,
                   public_names: set[str] | frozenset[str] = frozenset(),
                   global_names: set[str] | frozenset[str] = frozenset(), content_rules: bool = True) -> Candidate:
    """Build the change in staging and scan it; raises ``SkillChangeRefused``.

    ``content_rules`` False (``skill_scan.enabled: false``) keeps only the structural rules.
    The caller either ``commit_change``\\ s or ``discard``\\ s the candidate.
    """
    if action not in ACTIONS:
        raise SkillChangeRefused(f"action must be one of {', '.join(ACTIONS)} (got {action!r})")
    if not NAME_PATTERN.match(name or ""):
        raise SkillChangeRefused("name must be lowercase letters, digits and hyphens, at most 64 characters (e.g. weekly-report)")
    if name in public_names:
        raise SkillChangeRefused(f"'{name}' is a public skill; public skills are not changed by the agent. Choose another name")
    home = user_skills_home(str(user_id))
    live = home / CUSTOM / name
    exists = (live / SKILL_MD).is_file()
    if action == "create":
        if exists:
            raise SkillChangeRefused(f"you already have a skill named '{name}'; change it with edit or patch")
        if name in global_names:
            raise SkillChangeRefused(f"'{name}' is the name of a skill installed for everyone; choose another name")
    elif not exists:
        raise SkillChangeRefused(f"the user has no custom skill named '{name}' (create it first)")
    if action == "delete":
        return Candidate(str(user_id), name, action, SKILL_MD, _read(live / SKILL_MD), None, None, [])

    file_path = SKILL_MD
    if action in ("create", "edit"):
        if content is None:
            raise SkillChangeRefused(f"content (the whole SKILL.md) is required for {action}")
        new = content
    elif action == "patch":
        if not find:
            raise SkillChangeRefused("find (the exact text to replace) and replace are required for patch")
        new = None
    else:
        file_path = _support_path(path)
        if action == "write_file" and content is None:
            raise SkillChangeRefused("content is required for write_file")
        new = content if action == "write_file" else None
    if new is not None and len(new.encode("utf-8")) > MAX_MEMBER_BYTES:
        raise SkillChangeRefused(f"content is larger than {MAX_MEMBER_BYTES // (1024 * 1024)} MB")

    home.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=home))
    try:
        tree = staging / name
        if exists:
            shutil.copytree(live, tree, symlinks=True)
        else:
            tree.mkdir()
        target = tree / file_path
        prev = _read(target) if exists else None
        replacements = 0
        if action == "patch":
            found = (prev or "").count(find)
            if found == 0:
                raise SkillChangeRefused("the find text does not occur in SKILL.md; read the skill and copy the text exactly")
            if expected_count is not None and found != expected_count:
                raise SkillChangeRefused(f"the find text occurs {found} time(s), not the expected {expected_count}")
            replacements = expected_count or 1
            new = (prev or "").replace(find, replace or "", replacements)
        if action == "remove_file":
            if prev is None:
                raise SkillChangeRefused(f"'{name}' has no file {file_path}")
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or (target.exists() and not target.is_file()):
                raise SkillChangeRefused(f"{file_path} is not a plain file")
            target.write_text(new, encoding="utf-8")
        review = review_directory(tree, subject=f"skill://custom/{name}", content=content_rules)
        if review.meta is not None and review.meta.name != name:
            review.findings.append(Finding("name.mismatch", CRITICAL, SKILL_MD, None,
                                           f"the front matter names '{review.meta.name}', not '{name}'"))
        blocking = holding_findings(review.findings)
        if blocking:
            raise SkillChangeRefused(f"the scan refused the change to '{name}'", review.findings)
        return Candidate(str(user_id), name, action, file_path, prev, new, staging, review.findings, replacements)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def commit_change(candidate: Candidate) -> None:
    """Put the scanned copy in place (or, for delete, retire the live one): one rename each,
    under the install's lock for this user's skill, so an upload cannot interleave."""
    home = user_skills_home(candidate.user_id)
    try:
        with _lock(f"{home}:{candidate.name}"):
            live = home / CUSTOM / candidate.name
            if candidate.action == "delete":
                # Retired, not erased: the Skills page's history can bring it back.
                _retire(home, candidate.name)
            else:
                (home / CUSTOM).mkdir(parents=True, exist_ok=True)
                _retire(home, candidate.name)
                os.rename(candidate.staging / candidate.name, live)
    finally:
        candidate.discard()
    clear_cache()


def change_summary(candidate: Candidate) -> str:
    name, path = candidate.name, candidate.file_path
    done = {
        "create": f"Created the skill '{name}'.",
        "edit": f"Rewrote SKILL.md of '{name}'.",
        "patch": f"Patched SKILL.md of '{name}' ({candidate.replacements} replacement(s)).",
        "write_file": f"Wrote {path} in '{name}'.",
        "remove_file": f"Removed {path} from '{name}'.",
        "delete": f"Deleted the skill '{name}'; the user can restore it from the Skills page.",
    }[candidate.action]
    warnings = [f for f in candidate.findings if f.severity not in (CRITICAL,)]
    if warnings:
        done += " Scan warnings: " + "; ".join(f"{f.file}{f':{f.line}' if f.line else ''} {f.message} ({f.rule})" for f in warnings[:5])
    return done


def render_findings(findings: list[Finding], limit: int = 10) -> str:
    lines = [f"- [{f.severity}] {f.rule} at {f.file}{f':{f.line}' if f.line else ''}: {f.message}" for f in findings[:limit]]
    if len(findings) > limit:
        lines.append(f"- … {len(findings) - limit} more")
    return "\n".join(lines)
