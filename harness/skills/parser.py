"""SKILL.md: YAML front matter between ``---`` lines, then the instructions.

The format is the open Agent Skills one, so a skill written for another agent loads
unchanged: unknown keys are kept out of the way rather than refused. What is refused is what
would make a skill unsafe or unusable here: no front matter, YAML that does not parse, a
missing or path-like name, a missing description. Errors carry the line they point at, so
the install page and the scan findings can show where the file is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_DESCRIPTION = 1024
MAX_SKILL_MD_BYTES = 256 * 1024


class SkillParseError(ValueError):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True)
class SecretRequirement:
    name: str
    optional: bool = False


@dataclass(frozen=True)
class SkillMeta:
    name: str
    description: str
    license: str | None = None
    version: str | None = None
    author: str | None = None
    compatibility: str | None = None
    allowed_tools: tuple[str, ...] | None = None  # None: no restriction declared
    required_secrets: tuple[SecretRequirement, ...] = ()
    # DeerFlow's ``secrets-autonomous``: false keeps the declared secrets from a skill the
    # agent loads on its own (reading SKILL.md); only ``/name`` started by the user binds them.
    secrets_autonomous: bool = True
    body: str = ""
    extra: dict = field(default_factory=dict, compare=False)


def _split(text: str) -> tuple[str, str, int]:
    """(front matter, body, line number where the body starts)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillParseError("SKILL.md must start with a '---' line opening the YAML front matter", 1)
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), i + 2
    raise SkillParseError("the YAML front matter is not closed by a '---' line", 1)


def _text(data: dict, key: str, line_of) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # `version: 1.0` is a float to YAML, a version to people
    if not isinstance(value, str):
        raise SkillParseError(f"'{key}' must be text", line_of(key))
    return value.strip() or None


def _tools(value, line: int | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        items = [v for v in re.split(r"[\s,]+", value) if v]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value if v.strip()]
    else:
        raise SkillParseError("'allowed-tools' must be a list of tool names or a space-separated string", line)
    return tuple(dict.fromkeys(items))


def _secrets(value, line: int | None) -> tuple[SecretRequirement, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SkillParseError("'required-secrets' must be a list", line)
    out: list[SecretRequirement] = []
    for item in value:
        if isinstance(item, str):
            name, optional = item, False
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            name, optional = item["name"], bool(item.get("optional", False))
        else:
            raise SkillParseError("each 'required-secrets' entry is a name or {name, optional}", line)
        if not _ENV_NAME.match(name):
            raise SkillParseError(f"secret name {name!r} is not a valid environment variable name", line)
        out.append(SecretRequirement(name, optional))
    return tuple(out)


def _autonomous(value, line: int | None, strict: bool) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return value
    if strict:
        raise SkillParseError("'secrets-autonomous' must be true or false", line)
    return False  # a skill already on disk with a malformed value binds nothing by itself


def parse_skill_md(text: str, *, strict: bool = False) -> SkillMeta:
    """``strict`` (installs): a malformed ``secrets-autonomous`` is an error instead of false."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SKILL_MD_BYTES:
        raise SkillParseError(f"SKILL.md is larger than {MAX_SKILL_MD_BYTES // 1024} KB")
    head, body, _ = _split(text)
    try:
        data = yaml.safe_load(head) if head.strip() else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SkillParseError(f"the front matter is not valid YAML: {reason}", line) from None
    if not isinstance(data, dict):
        raise SkillParseError("the front matter must be a mapping of keys such as name and description", 2)
    head_lines = head.splitlines()

    def line_of(key: str) -> int | None:
        for i, ln in enumerate(head_lines):
            if ln.split(":", 1)[0].strip() == key:
                return i + 2
        return None

    name = data.get("name")
    if name is None or (isinstance(name, str) and not name.strip()):
        raise SkillParseError("the front matter has no 'name'", 2)
    if not isinstance(name, str) or not NAME_PATTERN.match(name.strip()):
        raise SkillParseError(
            f"name {name!r} is not valid: use 1-64 lowercase letters, digits and '-', starting with a letter or digit",
            line_of("name"),
        )
    description = _text(data, "description", line_of)
    if not description:
        raise SkillParseError("the front matter has no 'description'", line_of("description") or 2)
    if len(description) > MAX_DESCRIPTION:
        raise SkillParseError(f"'description' is longer than {MAX_DESCRIPTION} characters", line_of("description"))
    known = {"name", "description", "license", "version", "author", "compatibility", "allowed-tools", "required-secrets",
             "secrets-autonomous", "metadata"}
    return SkillMeta(
        name=name.strip(),
        description=" ".join(description.split()),
        license=_text(data, "license", line_of),
        version=_text(data, "version", line_of),
        author=_text(data, "author", line_of),
        compatibility=_text(data, "compatibility", line_of),
        allowed_tools=_tools(data.get("allowed-tools"), line_of("allowed-tools")),
        required_secrets=_secrets(data.get("required-secrets"), line_of("required-secrets")),
        secrets_autonomous=_autonomous(data.get("secrets-autonomous"), line_of("secrets-autonomous"), strict),
        body=body,
        extra={k: v for k, v in data.items() if k not in known},
    )
