"""Shared rules for skill-creator's scripts (stdlib and PyYAML only: they run in the sandbox)."""

import re
from pathlib import Path

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


def front_matter(text):
    """(mapping, errors) for a SKILL.md text."""
    import yaml

    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None, ["SKILL.md must start with a '---' line"]
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            try:
                data = yaml.safe_load("\n".join(lines[1:i]))
            except yaml.YAMLError as exc:
                return None, [f"the front matter is not valid YAML: {exc}"]
            return (data if isinstance(data, dict) else None), ([] if isinstance(data, dict) else ["the front matter must be a mapping"])
    return None, ["the front matter is not closed by a '---' line"]


def validate(folder):
    """A list of errors; empty when the skill folder is valid."""
    folder = Path(folder)
    md = folder / "SKILL.md"
    if not md.is_file():
        return [f"{md} does not exist"]
    data, errors = front_matter(md.read_text(encoding="utf-8"))
    if errors:
        return errors
    name = data.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        errors.append("name must be 1-64 lowercase letters, digits or '-'")
    elif name != folder.name:
        errors.append(f"name '{name}' must match the folder name '{folder.name}'")
    desc = data.get("description")
    if not isinstance(desc, str) or not desc.strip():
        errors.append("description is required")
    elif len(desc) > 1024:
        errors.append("description is longer than 1024 characters")
    for path in folder.rglob("*"):
        if path.is_symlink():
            errors.append(f"{path.relative_to(folder)} is a symbolic link; copy the file instead")
    return errors
