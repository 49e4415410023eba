"""``manage.py config_upgrade``: bring an older ``config.yaml`` up to the example's version.

The file is edited as text, so every comment, blank line and quoting choice in it stays where it
was. What is added:

* each top-level section of ``config.example.yaml`` the file lacks, under the comment block the
  example has above it;
* inside each section the file has, at any depth, each key of the example's section the file
  lacks, at the end of that mapping, under the example's comment for it;

always with the loader's defaults as the values, never the example's (those are samples: the
example turns memory on, for one, where the default is off). So an upgraded file loads to the
same settings it had before, only spelled out. ``config_version`` is set to the example's.
List sections (``models``, ``tools``, ``tool_groups``) are never added: their absence means
"none", and the example's entries are samples, not defaults. A mapping written in flow style
(``memory: {enabled: true}``) is left as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.config.app_config import AppConfig
from harness.config.paths import REPO_ROOT

_KEY = re.compile(r"^( *)([A-Za-z_][\w-]*):(.*)$")
_VERSION = re.compile(r"^config_version:[ \t]*[^\s#]*", re.MULTILINE)
NEVER_ADDED = frozenset({"config_version", "models", "tools", "tool_groups"})


def example_path() -> Path:
    return REPO_ROOT / "config.example.yaml"


@dataclass(frozen=True)
class _Entry:
    """One key of a block mapping: ``start`` is its first comment line (or the key line),
    ``line`` the key line, ``end`` one past its last line; ``inline`` what follows the colon."""

    key: str
    start: int
    line: int
    end: int
    inline: str


def _is_comment_or_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _child_indent(lines: list[str]) -> int | None:
    for line in lines:
        if not _is_comment_or_blank(line):
            return len(line) - len(line.lstrip(" "))
    return None


def _entries(lines: list[str], indent: int | None) -> list[_Entry]:
    """The keys of the mapping whose lines are ``lines``, its keys at ``indent`` spaces."""
    if indent is None:
        return []
    found: list[tuple[str, int, str]] = []
    for i, line in enumerate(lines):
        match = _KEY.match(line)
        if match and len(match.group(1)) == indent:
            found.append((match.group(2), i, match.group(3)))
    entries = []
    for n, (key, i, inline) in enumerate(found):
        start = i
        while start > 0 and lines[start - 1].strip().startswith("#") and (n == 0 or start - 1 > found[n - 1][1]):
            start -= 1
        entries.append(_Entry(key, start, i, len(lines), inline))
    return [e if n + 1 == len(entries) else _Entry(e.key, e.start, e.line, entries[n + 1].start, e.inline)
            for n, e in enumerate(entries)]


def _comment_lines(lines: list[str], entry: _Entry, indent: int) -> list[str]:
    return [" " * indent + line.strip() + "\n" for line in lines[entry.start:entry.line] if line.strip()]


def _dump(key: str, value: Any, indent: int) -> list[str]:
    text = yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return [" " * indent + line + "\n" for line in text.splitlines()]


def _is_block_mapping(entry: _Entry) -> bool:
    rest = entry.inline.strip()
    return not rest or rest.startswith("#")


def _merge(body: list[str], example_body: list[str], user: dict, example: dict, default: dict,
           path: str) -> tuple[list[str], list[str]]:
    """``body`` (a mapping's lines) with the example's missing keys appended, recursively, and
    the dotted names of what was added, in the file's order."""
    indent = _child_indent(body)
    if indent is None:
        return body, []
    ours = {e.key: e for e in _entries(body, indent)}
    theirs = {e.key: e for e in _entries(example_body, _child_indent(example_body))}
    out = list(body)
    inner: dict[str, list[str]] = {}
    # Bottom-up, so the line numbers of the entries still to do stay true.
    for entry in sorted(ours.values(), key=lambda e: e.line, reverse=True):
        key = entry.key
        if (key in theirs and _is_block_mapping(entry) and _is_block_mapping(theirs[key])
                and all(isinstance(m.get(key), dict) for m in (user, example, default))):
            sub = theirs[key]
            out[entry.line + 1:entry.end], inner[key] = _merge(
                out[entry.line + 1:entry.end], example_body[sub.line + 1:sub.end], user[key], example[key], default[key], f"{path}.{key}")
    added = [name for entry in sorted(ours.values(), key=lambda e: e.line) for name in inner.get(entry.key, [])]
    extra: list[str] = []
    for key, entry in theirs.items():
        if key in user or key not in default:
            continue
        extra += _comment_lines(example_body, entry, indent) + _dump(key, default[key], indent)
        added.append(f"{path}.{key}")
    if extra:
        last = max((i for i, line in enumerate(out) if not _is_comment_or_blank(line)), default=len(out) - 1)
        out[last + 1:last + 1] = extra
    return out, added


def missing_sections(user_keys: list[str], example_text: str | None = None) -> list[str]:
    """The example's top-level sections a file with ``user_keys`` lacks, in the example's order."""
    text = example_text if example_text is not None else example_path().read_text(encoding="utf-8")
    present = set(user_keys)
    lines = text.splitlines(keepends=True)
    return [e.key for e in _entries(lines, 0) if e.key not in present and e.key not in NEVER_ADDED]


def example_version(example_text: str) -> int:
    data = yaml.safe_load(example_text) or {}
    return int(data.get("config_version", 0) or 0) if isinstance(data, dict) else 0


def upgrade_text(user_text: str, example_text: str) -> tuple[str, list[str]]:
    """The upgraded text and what was added (``memory`` for a section, ``memory.mode`` for a
    key inside one). A file already current comes back unchanged."""
    data = yaml.safe_load(user_text) or {}
    if not isinstance(data, dict):
        raise ValueError("the top level must be a mapping of sections")
    example = yaml.safe_load(example_text) or {}
    target = example_version(example_text)
    try:
        current = int(data.get("config_version", 0) or 0)
    except (TypeError, ValueError):
        current = 0
    if current >= target:
        return user_text, []
    defaults = AppConfig().model_dump(mode="json")
    example_lines = example_text.splitlines(keepends=True)
    theirs = {e.key: e for e in _entries(example_lines, 0)}

    lines = user_text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    inner: dict[str, list[str]] = {}
    entries = _entries(lines, 0)
    for entry in sorted(entries, key=lambda e: e.line, reverse=True):
        key = entry.key
        if (key in theirs and key not in NEVER_ADDED and _is_block_mapping(entry) and _is_block_mapping(theirs[key])
                and all(isinstance(m.get(key), dict) for m in (data, example, defaults))):
            sub = theirs[key]
            lines[entry.line + 1:entry.end], inner[key] = _merge(
                lines[entry.line + 1:entry.end], example_lines[sub.line + 1:sub.end], data[key], example[key], defaults[key], key)
    nested = [name for entry in entries for name in inner.get(entry.key, [])]
    out = "".join(lines)
    if _VERSION.search(out):
        out = _VERSION.sub(f"config_version: {target}", out, count=1)
    else:
        out = f"config_version: {target}\n" + out
    sections = [key for key in missing_sections(list(data), example_text) if key in defaults]
    if sections:
        out += "\n# --- added by manage.py config_upgrade from config.example.yaml ---\n\n"
        out += "\n".join("".join(_comment_lines(example_lines, theirs[key], 0) + _dump(key, defaults[key], 0)) for key in sections)
    return out, sections + nested
