"""Writes to the MCP settings: replace the servers and toggle one (``harness.mcp.settings``,
shared with the embedded client), test one, close a deleted thread's sessions."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from apps.errors import NotFound
from apps.runs.runtime import get_runtime
from harness.mcp import close_thread_sessions
from harness.mcp.settings import mcp_config_replace, mcp_server_toggle

__all__ = ["mcp_config_replace", "mcp_server_test", "mcp_server_toggle", "mcp_thread_closes_listen",
           "mcp_thread_sessions_close"]

# Redis pub/sub channel on which a deleted thread reaches every process holding its sessions.
THREAD_CLOSE_CHANNEL = "deerflow:mcp:thread-close"


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
    """A deleted thread's own MCP server processes are closed once the delete commits: this
    process's, and, on a distributed installation, those of every server and Celery worker that
    ran the thread's tools (each listens through ``mcp_thread_closes_listen``). Registered on
    the threads app's cleanups."""

    def _close_everywhere() -> None:
        close_thread_sessions(thread_id)
        runtime = get_runtime()
        if runtime.distributed:
            runtime.publish(THREAD_CLOSE_CHANNEL, {"thread_id": thread_id})

    transaction.on_commit(_close_everywhere)


async def mcp_thread_closes_listen(runtime) -> None:
    """On every process's runs loop (where the runs that open MCP sessions execute): close the
    sessions of threads deleted through another process."""
    if runtime.distributed:
        await runtime.listen(THREAD_CLOSE_CHANNEL, lambda message: close_thread_sessions(str(message["thread_id"])),
                             "MCP thread close")
