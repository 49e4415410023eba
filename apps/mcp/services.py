"""Writes to the MCP settings: replace the servers, toggle one, test one.

Every write validates first and only then replaces ``extensions_config.json`` atomically,
so a bad request leaves the file as it was. A masked secret sent back unchanged (what the
GET showed) keeps the stored value: a round trip through the settings page never wipes one.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from pydantic import ValidationError

from apps.errors import InvalidRequest, NotFound
from apps.mcp.selectors import extensions_raw, server_masked
from harness.config import save_extensions_config
from harness.config.extensions import McpServerConfig
from harness.config.loader import validation_message
from harness.mcp import close_thread_sessions
from harness.sandbox.env_policy import MASK


def _current():
    return extensions_raw()


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
    config = _current()
    servers = {name: _validate(name, raw, config.mcp_servers.get(name)) for name, raw in data["mcp_servers"].items()}
    updated = config.model_copy(update={"mcp_servers": servers})
    save_extensions_config(updated)
    return {"mcp_servers": {name: server_masked(cfg) for name, cfg in servers.items()}}


def mcp_server_toggle(*, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict) or not isinstance(data.get("server_name"), str):
        raise InvalidRequest("server_name: the name of a configured server")
    if not isinstance(data.get("enabled"), bool):
        raise InvalidRequest("enabled: true or false")
    config = _current()
    name = data["server_name"]
    if name not in config.mcp_servers:
        raise NotFound(f"no MCP server named '{name}'")
    # Only an entry being enabled is checked in full: a disabled one may be a draft.
    server = _validate(name, {**config.mcp_servers[name].model_dump(mode="json"), "enabled": data["enabled"]}, None)
    servers = {**config.mcp_servers, name: server}
    save_extensions_config(config.model_copy(update={"mcp_servers": servers}))
    return {"mcp_servers": {n: server_masked(c) for n, c in servers.items()}}


def mcp_server_test(*, name: str) -> dict[str, Any]:
    """Connect again now (also a failed server) and report its status."""
    from harness.config import get_extensions_config
    from harness.mcp import get_mcp_tools, mcp_status

    extensions = get_extensions_config()
    if name not in extensions.mcp_servers:
        raise NotFound(f"no MCP server named '{name}'")
    get_mcp_tools(extensions, retry=True)
    return next(s for s in mcp_status(extensions) if s["name"] == name)


def mcp_thread_sessions_close(thread_id: str) -> None:
    """A deleted thread's own MCP server processes are closed once the delete commits (this
    process's; a Celery worker's close when idle). Registered on the threads app's cleanups."""
    transaction.on_commit(lambda: close_thread_sessions(thread_id))
