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

from pydantic import (BaseModel, ConfigDict, Field, NonNegativeInt, PositiveFloat, PrivateAttr, ValidationError, field_validator,
                      model_validator)

from harness.config import class_path
from harness.config.env import MissingEnvVar, resolve_tree
from harness.config.errors import ConfigError
from harness.config.loader import validation_message
from harness.config.paths import resolve_extensions_path


class McpOAuthConfig(BaseModel):
    """A token endpoint the harness calls for an HTTP/SSE server's bearer token (DeerFlow's keys)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    token_url: str = ""
    grant_type: Literal["client_credentials", "refresh_token"] = "client_credentials"
    client_id: str | None = None
    client_secret: str | None = None
    refresh_token: str | None = None
    scope: str | None = None
    audience: str | None = None
    token_field: str = "access_token"
    token_type_field: str = "token_type"
    expires_in_field: str = "expires_in"
    default_token_type: str = "Bearer"
    refresh_skew_seconds: NonNegativeInt = 60
    extra_token_params: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _needs(self) -> McpOAuthConfig:
        if self.enabled and not self.token_url:
            raise ValueError("oauth needs 'token_url'")
        if self.enabled and self.grant_type == "refresh_token" and not self.refresh_token:
            raise ValueError("the refresh_token grant needs 'refresh_token'")
        return self


class McpRoutingConfig(BaseModel):
    """DeerFlow's soft preference for a server's (or one tool's) tools: with ``mode: prefer``
    and keywords, the prompt tells the model to prefer the tool for requests mentioning them,
    and with ``tool_search`` on, a message mentioning one promotes the deferred tool."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["off", "prefer"] = "off"
    priority: int = 0
    keywords: list[str] = Field(default_factory=list)

    @field_validator("priority")
    @classmethod
    def _clamp(cls, value: int) -> int:
        # DeerFlow clamps to 0..100 rather than refusing; a file it loads must load here.
        return max(0, min(100, value))

    @field_validator("keywords")
    @classmethod
    def _words(cls, value: list[str]) -> list[str]:
        return [w.strip() for w in value if w.strip()]


class McpToolPolicy(BaseModel):
    """``tools``: which of a server's tools the agent gets, and per-tool routing hints.

    ``allow`` (when given) and ``deny`` hold tool names or fnmatch patterns; any other key is
    a tool name mapping to ``{"enabled": bool, "routing": ...}``."""

    model_config = ConfigDict(extra="allow")

    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _tool_routing(self) -> McpToolPolicy:
        for name, entry in (self.model_extra or {}).items():
            if isinstance(entry, dict) and entry.get("routing") is not None:
                try:
                    McpRoutingConfig.model_validate(entry["routing"])
                except ValidationError as exc:
                    field, reason = validation_message(exc)
                    where = "" if field.startswith("(") else f".{field}"
                    raise ValueError(f"{name}.routing{where}: {reason}") from None
        return self

    def tool_settings(self, name: str) -> dict[str, Any]:
        entry = (self.model_extra or {}).get(name)
        return entry if isinstance(entry, dict) else {}

    def permits(self, name: str) -> bool:
        from fnmatch import fnmatchcase

        if self.tool_settings(name).get("enabled") is False:
            return False
        if self.allow is not None and not any(fnmatchcase(name, p) for p in self.allow):
            return False
        return not any(fnmatchcase(name, p) for p in self.deny)


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    enabled: bool = True
    type: Literal["stdio", "sse", "http", "streamable_http", "streamable-http"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: McpOAuthConfig | None = None
    description: str = ""
    tool_call_timeout: PositiveFloat | None = None
    connect_timeout: PositiveFloat | None = None
    tools: McpToolPolicy = Field(default_factory=McpToolPolicy)
    routing: McpRoutingConfig = Field(default_factory=McpRoutingConfig)
    # "thread": one process per user and thread, started in the thread's workspace, for
    # servers that keep state between calls; "shared" (default): one process for everyone.
    session_scope: Literal["shared", "thread"] = "shared"
    session_idle_timeout: PositiveFloat = 600.0
    # Set when a $VAR of this server is missing: the server reports it instead of the whole
    # file failing, so one server's missing secret never takes the others down.
    unresolved: str | None = Field(default=None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _transport_alias(cls, data: Any) -> Any:
        # DeerFlow's older MCP files name the transport "transport" instead of "type".
        if isinstance(data, dict) and "transport" in data and "type" not in data:
            data = {**data, "type": data["transport"]}
            data.pop("transport")
        return data

    @model_validator(mode="after")
    def _transport_needs(self) -> McpServerConfig:
        # A disabled entry may be a half-filled template (DeerFlow's example has one).
        if not self.enabled:
            return self
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio server needs 'command'")
        if self.type != "stdio" and not self.url:
            raise ValueError(f"a {self.type} server needs 'url'")
        if self.type == "stdio" and self.oauth is not None and self.oauth.enabled:
            raise ValueError("oauth applies to sse and http servers only")
        if self.type != "stdio" and self.session_scope == "thread":
            raise ValueError("session_scope 'thread' applies to stdio servers only")
        return self

    def effective_routing(self, tool: str) -> McpRoutingConfig:
        """The server's routing with the fields a ``tools.<tool>.routing`` entry sets over it
        (only those: an override naming keywords alone keeps the server's mode)."""
        override = self.tools.tool_settings(tool).get("routing")
        if not isinstance(override, dict):
            return self.routing
        merged = self.routing.model_dump()
        merged.update(McpRoutingConfig.model_validate(override).model_dump(exclude_unset=True))
        return McpRoutingConfig.model_validate(merged)


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

    # What the loader did with DeerFlow-only keys (harness.config.deerflow_compat).
    _compat_notes: list[Any] = PrivateAttr(default_factory=list)

    @property
    def compat_notes(self) -> list[Any]:
        return list(self._compat_notes)

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
    from harness.config.deerflow_compat import translate_extensions

    data, notes = translate_extensions(data)
    unresolved: dict[str, str] = {}
    if resolve_env:
        servers = data.get("mcpServers")
        rest = {k: v for k, v in data.items() if k != "mcpServers"}
        try:
            data = resolve_tree(rest)
        except MissingEnvVar as exc:
            raise ConfigError(str(exc), path=display, field=exc.field) from None
        if isinstance(servers, dict):
            data["mcpServers"] = {}
            for name, server in servers.items():
                try:
                    data["mcpServers"][name] = resolve_tree(server, f"mcpServers.{name}")
                except MissingEnvVar as exc:
                    data["mcpServers"][name] = server
                    unresolved[name] = f"{exc} ({exc.field})"
        elif servers is not None:
            data["mcpServers"] = servers
    try:
        config = ExtensionsConfig.model_validate(data)
        for name, reason in unresolved.items():
            config.mcp_servers[name].unresolved = reason
        config._compat_notes = notes
        return config
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
