"""Writes to the MCP settings: replace the servers and toggle one (``harness.mcp.settings``,
shared with the embedded client), test one, close a deleted thread's sessions."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from apps.errors import NotFound
from harness.mcp import close_thread_sessions
from harness.mcp.settings import mcp_config_replace, mcp_server_toggle

__all__ = ["mcp_config_replace", "mcp_server_test", "mcp_server_toggle", "mcp_thread_sessions_close"]


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
