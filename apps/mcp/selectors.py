"""Reads for the MCP settings: the configured servers (secrets masked; ``harness.mcp.settings``,
shared with the embedded client) and their status."""

from __future__ import annotations

from typing import Any

from apps.errors import InvalidRequest
from harness.config import ConfigError
from harness.mcp.settings import extensions_raw, mcp_config_get, server_masked

__all__ = ["extensions_raw", "mcp_config_get", "mcp_status_list", "server_masked"]


def mcp_status_list() -> dict[str, Any]:
    from harness.config import get_extensions_config
    from harness.mcp import mcp_status

    try:
        extensions = get_extensions_config()
    except ConfigError as exc:
        raise InvalidRequest(f"extensions_config.json is invalid, fix it on disk first: {exc}") from None
    return {"servers": mcp_status(extensions)}
