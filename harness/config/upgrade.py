"""``manage.py config_upgrade``: bring an older ``config.yaml`` up to the example's version.

The file is edited as text, so every comment and blank line in it stays where it was: each
top-level section of ``config.example.yaml`` the file lacks is appended with the loader's
defaults as its values, under the comment block the example has above it (the example's own
values are samples: it turns memory on, for one, where the default is off), and
``config_version`` is set to the example's. Keys missing *inside* a section the file has are not added (the section's defaults
already apply to them). List sections (``models``, ``tools``, ``tool_groups``) are never added:
their absence means "none", and the example's entries are samples, not defaults.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from harness.config.paths import REPO_ROOT

_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*):")
_VERSION = re.compile(r"^config_version:[ \t]*[^\s#]*", re.MULTILINE)
NEVER_ADDED = frozenset({"config_version", "models", "tools", "tool_groups"})


def example_path() -> Path:
    return REPO_ROOT / "config.example.yaml"


def example_blocks(text: str) -> dict[str, str]:
    """Each top-level key of a YAML file -> its text, with the comment lines just above it."""
    lines = text.splitlines(keepends=True)
    starts: list[tuple[str, int]] = []
    for i, line in enumerate(lines):
        match = _TOP_KEY.match(line)
        if match:
            start = i
            while start > 0 and lines[start - 1].startswith("#"):
                start -= 1
            starts.append((match.group(1), start))
    blocks: dict[str, str] = {}
    for n, (key, start) in enumerate(starts):
        end = starts[n + 1][1] if n + 1 < len(starts) else len(lines)
        blocks[key] = "".join(lines[start:end]).rstrip("\n") + "\n"
    return blocks


def _comments(block: str) -> str:
    lines = block.splitlines(keepends=True)
    head = []
    for line in lines:
        if not line.startswith("#"):
            break
        head.append(line)
    return "".join(head)


def missing_sections(user_keys: list[str], example_text: str | None = None) -> list[str]:
    """The example's top-level sections a file with ``user_keys`` lacks, in the example's order."""
    text = example_text if example_text is not None else example_path().read_text(encoding="utf-8")
    present = set(user_keys)
    return [k for k in example_blocks(text) if k not in present and k not in NEVER_ADDED]


def example_version(example_text: str) -> int:
    data = yaml.safe_load(example_text) or {}
    return int(data.get("config_version", 0) or 0) if isinstance(data, dict) else 0


def upgrade_text(user_text: str, example_text: str) -> tuple[str, list[str]]:
    """The upgraded text and the sections added. A file already current comes back unchanged."""
    data = yaml.safe_load(user_text) or {}
    if not isinstance(data, dict):
        raise ValueError("the top level must be a mapping of sections")
    target = example_version(example_text)
    try:
        current = int(data.get("config_version", 0) or 0)
    except (TypeError, ValueError):
        current = 0
    if current >= target:
        return user_text, []
    blocks = example_blocks(example_text)
    added = missing_sections(list(data), example_text)
    from harness.config.app_config import AppConfig

    defaults = AppConfig().model_dump(mode="json")
    out = user_text
    if _VERSION.search(out):
        out = _VERSION.sub(f"config_version: {target}", out, count=1)
    else:
        out = f"config_version: {target}\n" + out
    if added:
        if not out.endswith("\n"):
            out += "\n"
        out += "\n# --- added by manage.py config_upgrade from config.example.yaml ---\n\n"
        out += "\n".join(_comments(blocks[key]) + yaml.safe_dump({key: defaults[key]}, sort_keys=False, allow_unicode=True)
                          for key in added if key in defaults)
    return out, added
