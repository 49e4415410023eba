"""Finding skills on disk: public ones in the repo, global ones an admin installed for
everyone, custom ones per user.

A skill is a directory holding ``SKILL.md``; that directory is a package boundary, so a
``SKILL.md`` further down (an example, a template in skill-creator) is part of the skill,
not a second one. Hidden directories (``.versions``, staging) are never skills.

Parsing is cached per root by a signature of what the scan would read (each candidate
directory's and SKILL.md's mtime and size), so the run path pays a few ``stat`` calls, not a
parse; an edit or an install changes the signature and the next lookup reparses.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from harness.config.paths import HOME_ENV, REPO_ROOT, deer_flow_home
from harness.skills.parser import SkillMeta, SkillParseError, parse_skill_md

logger = logging.getLogger(__name__)

PUBLIC = "public"
CUSTOM = "custom"
GLOBAL = "global"
SKILLS_VIRTUAL = "/mnt/skills"
MAX_DEPTH = 3


@dataclass(frozen=True)
class Skill:
    meta: SkillMeta
    category: str  # public | global | custom
    directory: Path  # host directory
    container_path: str  # the directory as the sandbox sees it

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def skill_md_path(self) -> str:
        return f"{self.container_path}/SKILL.md"


@dataclass(frozen=True)
class SkillProblem:
    directory: Path
    message: str
    line: int | None


def public_root(skills_path: str | None = None) -> Path:
    base = Path(skills_path).expanduser() if skills_path else REPO_ROOT / "skills"
    if not base.is_absolute():
        base = REPO_ROOT / base
    return base / PUBLIC


@functools.lru_cache(maxsize=8)
def _home_for(raw: str | None) -> Path:
    return deer_flow_home()


def _home() -> Path:
    # deer_flow_home() resolves the path (about 17 us); every run looks up two skill roots,
    # so the answer is kept per value of the variable.
    return _home_for(os.environ.get(HOME_ENV))


def user_skills_home(user_id: str) -> Path:
    return _home() / "users" / str(user_id) / "skills"


def custom_root(user_id: str) -> Path:
    return user_skills_home(user_id) / CUSTOM


def global_skills_home() -> Path:
    """Skills an admin installed for everyone: ``global/{name}`` live, ``.versions`` beside it."""
    return _home() / "skills"


def global_root() -> Path:
    return global_skills_home() / GLOBAL


def _candidates(root: Path, depth: int = 0) -> list[Path]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        path = Path(entry.path)
        if (path / "SKILL.md").is_file():
            found.append(path)
        elif depth + 1 < MAX_DEPTH:
            found += _candidates(path, depth + 1)
    return found


def _signature(root: Path, depth: int = 0) -> tuple:
    """What a scan would read, as (path, mtime, size, inode) of each SKILL.md plus the
    directories' mtimes: plain ``os`` calls, since this runs once per run."""
    parts: list[tuple] = []
    try:
        entries = list(os.scandir(root))
        parts.append((str(root), os.stat(root).st_mtime_ns))
    except (FileNotFoundError, NotADirectoryError):
        return ("missing",) if depth == 0 else ()
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            md = os.stat(os.path.join(entry.path, "SKILL.md"))
            parts.append((entry.path, md.st_mtime_ns, md.st_size, md.st_ino))
        except (FileNotFoundError, NotADirectoryError):
            if depth + 1 < MAX_DEPTH:
                parts.extend(_signature(Path(entry.path), depth + 1))
    return tuple(sorted(parts))


def scan_root(root: Path, category: str, virtual_root: str) -> tuple[list[Skill], list[SkillProblem]]:
    skills: dict[str, Skill] = {}
    problems: list[SkillProblem] = []
    for path in _candidates(root):
        try:
            meta = parse_skill_md((path / "SKILL.md").read_text(encoding="utf-8"))
        except (SkillParseError, UnicodeDecodeError, OSError) as exc:
            problems.append(SkillProblem(path, getattr(exc, "message", str(exc)), getattr(exc, "line", None)))
            continue
        if meta.name in skills:
            problems.append(SkillProblem(path, f"a second skill named {meta.name!r}; the first one is used", None))
            continue
        rel = path.relative_to(root).as_posix()
        skills[meta.name] = Skill(meta, category, path, f"{virtual_root}/{rel}")
    for problem in problems:
        logger.warning("skill at %s not loaded: %s", problem.directory, problem.message)
    return sorted(skills.values(), key=lambda s: s.name), problems


class _RootCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], tuple[tuple, list[Skill], list[SkillProblem]]] = {}

    def get(self, root: Path, category: str, virtual_root: str) -> tuple[list[Skill], list[SkillProblem]]:
        key = (str(root), virtual_root)
        signature = _signature(root)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] == signature:
                return hit[1], hit[2]
        skills, problems = scan_root(root, category, virtual_root)
        with self._lock:
            self._entries[key] = (signature, skills, problems)
            if len(self._entries) > 1024:  # one per active user; an old one is cheap to rebuild
                self._entries.pop(next(iter(self._entries)))
        return skills, problems

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_cache = _RootCache()


def load_public_skills(skills_path: str | None = None, virtual: str = SKILLS_VIRTUAL) -> list[Skill]:
    return _cache.get(public_root(skills_path), PUBLIC, f"{virtual}/{PUBLIC}")[0]


def load_custom_skills(user_id: str, virtual: str = SKILLS_VIRTUAL) -> list[Skill]:
    return _cache.get(custom_root(user_id), CUSTOM, f"{virtual}/{CUSTOM}")[0]


def load_global_skills(virtual: str = SKILLS_VIRTUAL) -> list[Skill]:
    return _cache.get(global_root(), GLOBAL, f"{virtual}/{GLOBAL}")[0]


def load_skills(user_id: str, skills_path: str | None = None, virtual: str = SKILLS_VIRTUAL) -> list[Skill]:
    """Public skills, then global ones, then the user's custom ones, one skill per name.

    Precedence is public > the user's own > global. Nothing shadows a public name (install
    refuses the clash; one copied in by hand is ignored with a warning). A user's own skill
    wins over a global one of the same name, so an admin's later install never swaps a skill
    a user already relies on; install refuses a user's *new* skill under a global name.
    """
    public = load_public_skills(skills_path, virtual)
    public_names = {s.name for s in public}
    custom = []
    for skill in load_custom_skills(user_id, virtual):
        if skill.name in public_names:
            logger.warning("custom skill %s of user %s has a public skill's name; ignored", skill.name, user_id)
            continue
        custom.append(skill)
    own = {s.name for s in custom}
    shared = []
    for skill in load_global_skills(virtual):
        if skill.name in public_names:
            logger.warning("global skill %s has a public skill's name; ignored", skill.name)
            continue
        if skill.name not in own:
            shared.append(skill)
    return [*public, *shared, *custom]


def clear_cache() -> None:
    _cache.clear()
