"""The MCP settings as the API and the embedded client show and change them.

Reads show the servers as ``extensions_config.json`` holds them (``$VAR`` references
unresolved) with secrets masked. Every write validates first and only then replaces the file
atomically, so a bad request leaves the file as it was; a masked secret sent back unchanged
(what a read showed) keeps the stored value, so a round trip never wipes one.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from harness.config import ConfigError, save_extensions_config
from harness.config.extensions import McpServerConfig, parse_extensions
from harness.config.loader import validation_message
from harness.config.paths import resolve_extensions_path
from harness.errors import InvalidRequest, NotFound
from harness.sandbox.env_policy import MASK, is_secret_name

_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})
_SECRET_OAUTH_KEYS = ("client_secret", "refresh_token")


def _mask(value: Any) -> Any:
    # A $VAR reference is not a secret, and showing it tells the operator where the value lives.
    if not isinstance(value, str) or not value or value.lstrip().startswith("$"):
        return value
    return MASK


def server_masked(config: McpServerConfig) -> dict[str, Any]:
    data = config.model_dump(mode="json")
    data["env"] = {k: _mask(v) if is_secret_name(k) else v for k, v in config.env.items()}
    data["headers"] = {k: _mask(v) if k.lower() in _SECRET_HEADERS or is_secret_name(k) else v
                       for k, v in config.headers.items()}
    if data.get("oauth"):
        for key in _SECRET_OAUTH_KEYS:
            data["oauth"][key] = _mask(data["oauth"].get(key))
    return data


def extensions_raw():
    """The file as written ($VAR references unresolved). A broken file is the operator's to
    fix on disk: refused with the file, field and reason."""
    path = resolve_extensions_path()
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        return parse_extensions(text, str(path), resolve_env=False)
    except ConfigError as exc:
        raise InvalidRequest(f"extensions_config.json is invalid, fix it on disk first: {exc}") from None


def mcp_config_get() -> dict[str, Any]:
    return {"mcp_servers": {name: server_masked(cfg) for name, cfg in extensions_raw().mcp_servers.items()}}


def _unmask(new: Any, old: Any) -> Any:
    if new == MASK:
        return old
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: _unmask(v, old.get(k)) for k, v in new.items()}
    return new


def _validate(name: Any, raw: Any, previous: McpServerConfig | None) -> McpServerConfig:
    if not isinstance(name, str) or not name.strip():
        raise InvalidRequest("mcp_servers: server names must be non-empty strings")
    if not isinstance(raw, dict):
        raise InvalidRequest(f"mcp_servers.{name}: must be an object")
    if previous is not None:
        raw = _unmask(raw, previous.model_dump(mode="json"))
    try:
        return McpServerConfig.model_validate(raw)
    except ValidationError as exc:
        field, reason = validation_message(exc)
        where = f"mcp_servers.{name}.{field}" if field and field != "(top level)" else f"mcp_servers.{name}"
        raise InvalidRequest(f"{where}: {reason}") from None


def mcp_config_replace(*, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict) or not isinstance(data.get("mcp_servers"), dict):
        raise InvalidRequest("mcp_servers: an object mapping server names to their settings")
    config = extensions_raw()
    servers = {name: _validate(name, raw, config.mcp_servers.get(name)) for name, raw in data["mcp_servers"].items()}
    save_extensions_config(config.model_copy(update={"mcp_servers": servers}))
    return {"mcp_servers": {name: server_masked(cfg) for name, cfg in servers.items()}}


def mcp_server_toggle(*, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict) or not isinstance(data.get("server_name"), str):
        raise InvalidRequest("server_name: the name of a configured server")
    if not isinstance(data.get("enabled"), bool):
        raise InvalidRequest("enabled: true or false")
    config = extensions_raw()
    name = data["server_name"]
    if name not in config.mcp_servers:
        raise NotFound(f"no MCP server named '{name}'")
    # Only an entry being enabled is checked in full: a disabled one may be a draft.
    server = _validate(name, {**config.mcp_servers[name].model_dump(mode="json"), "enabled": data["enabled"]}, None)
    servers = {**config.mcp_servers, name: server}
    save_extensions_config(config.model_copy(update={"mcp_servers": servers}))
    return {"mcp_servers": {n: server_masked(c) for n, c in servers.items()}}
