"""Reads for the MCP settings: the configured servers (secrets masked) and their status."""

from __future__ import annotations

from typing import Any

from apps.errors import InvalidRequest
from harness.config import ConfigError
from harness.config.extensions import McpServerConfig, parse_extensions
from harness.config.paths import resolve_extensions_path
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
    fix on disk: answered as 422 with the file, field and reason, never a 500."""
    path = resolve_extensions_path()
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        return parse_extensions(text, str(path), resolve_env=False)
    except ConfigError as exc:
        raise InvalidRequest(f"extensions_config.json is invalid, fix it on disk first: {exc}") from None


def mcp_config_get() -> dict[str, Any]:
    return {"mcp_servers": {name: server_masked(cfg) for name, cfg in extensions_raw().mcp_servers.items()}}


def mcp_status_list() -> dict[str, Any]:
    from harness.config import get_extensions_config
    from harness.mcp import mcp_status

    try:
        extensions = get_extensions_config()
    except ConfigError as exc:
        raise InvalidRequest(f"extensions_config.json is invalid, fix it on disk first: {exc}") from None
    return {"servers": mcp_status(extensions)}
