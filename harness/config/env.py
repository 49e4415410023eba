"""``$VAR`` / ``${VAR}`` / ``${VAR:-default}`` resolution for configuration values.

Only whole-string references are resolved, so a literal ``$`` inside a longer value (a
password, a regex) is left alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

_REF = re.compile(r"^\$(?:(?P<bare>[A-Za-z_][A-Za-z0-9_]*)|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\})$")


class MissingEnvVar(Exception):
    def __init__(self, var: str, field: str):
        self.var = var
        self.field = field
        super().__init__(f"environment variable {var} is not set")


def resolve_value(value: str, field: str, environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    match = _REF.match(value.strip())
    if not match:
        return value
    var = match.group("bare") or match.group("name")
    if var in environ:
        return environ[var]
    if match.group("default") is not None:
        return match.group("default")
    raise MissingEnvVar(var, field)


def resolve_tree(node: Any, field: str = "", environ: Mapping[str, str] | None = None) -> Any:
    """Return a copy of ``node`` with every string reference resolved.

    ``field`` is the dotted path of ``node`` and is what a :class:`MissingEnvVar` reports.
    """
    if isinstance(node, str):
        return resolve_value(node, field, environ)
    if isinstance(node, Mapping):
        return {k: resolve_tree(v, f"{field}.{k}" if field else str(k), environ) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve_tree(v, f"{field}[{i}]", environ) for i, v in enumerate(node)]
    return node
