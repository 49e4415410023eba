"""``extensions_config.json``: MCP servers, skill toggles and extension middlewares.

The API changes MCP servers and skill state at runtime, so this file is also written;
writes are atomic (temp file + rename) so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import logging
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError, field_validator, model_validator

from harness.config import class_path
from harness.config.env import MissingEnvVar, resolve_tree
from harness.config.errors import ConfigError
from harness.config.loader import validation_message
from harness.config.paths import resolve_extensions_path


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    type: Literal["stdio", "sse", "http", "streamable_http"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    description: str = ""
    tool_call_timeout: PositiveInt | None = None

    @model_validator(mode="after")
    def _transport_needs(self) -> McpServerConfig:
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio server needs 'command'")
        if self.type != "stdio" and not self.url:
            raise ValueError(f"a {self.type} server needs 'url'")
        return self


class SkillToggle(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True


class ExtensionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict, alias="mcpServers")
    skills: dict[str, SkillToggle] = Field(default_factory=dict)
    middlewares: list[str] = Field(default_factory=list)

    @field_validator("middlewares")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        return [class_path.check_format(v) for v in value]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_defaults=False)


logger = logging.getLogger(__name__)

_lock = threading.Lock()
_cache: dict[Path, tuple[str, ExtensionsConfig]] = {}


def parse_extensions(text: str, display: str = "extensions_config.json", *, resolve_env: bool = True) -> ExtensionsConfig:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}", path=display) from None
    if not isinstance(data, dict):
        raise ConfigError("the top level must be an object", path=display)
    if resolve_env:
        try:
            data = resolve_tree(data)
        except MissingEnvVar as exc:
            raise ConfigError(str(exc), path=display, field=exc.field) from None
    try:
        return ExtensionsConfig.model_validate(data)
    except ValidationError as exc:
        field, reason = validation_message(exc)
        raise ConfigError(reason, path=display, field=field) from None


def get_extensions_config(path: str | Path | None = None) -> ExtensionsConfig:
    resolved = resolve_extensions_path(path)
    try:
        raw = resolved.read_bytes()
        signature = hashlib.sha256(raw).hexdigest()
    except FileNotFoundError:
        raw, signature = b"", "missing"
    # The same object while the file is unchanged (missing included): callers key caches on it.
    cached = _cache.get(resolved)
    if cached and cached[0] == signature:
        return cached[1]
    with _lock:
        config = parse_extensions(raw.decode("utf-8", errors="replace"), str(resolved))
        from harness.config.availability import inactive_extensions

        for message in inactive_extensions(config):
            logger.warning("%s: %s", resolved, message)
        _cache[resolved] = (signature, config)
        return config


def save_extensions_config(config: ExtensionsConfig, path: str | Path | None = None) -> Path:
    resolved = resolve_extensions_path(path)
    resolved.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=resolved.parent, prefix=".extensions-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(config.to_json(), fh, indent=2)
            fh.write("\n")
        os.replace(tmp, resolved)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return resolved
