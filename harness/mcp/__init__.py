"""MCP tools from ``extensions_config.json``: loaded on first use, kept per server.

``get_mcp_tools()`` is what the tool registry calls for every agent build. With no
enabled server it returns at once and starts nothing. Otherwise the servers are kept in
step with the file: the same tools object comes back while neither the file's content
(its signature) nor the guard's allow-list changed, so a cached agent graph stays valid; an
edit is noticed by every process on its next build, without a restart.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import threading
import time
from concurrent.futures import Future
from typing import Any

from langchain_core.tools import BaseTool

from harness.config.extensions import ExtensionsConfig, McpServerConfig

_lock = threading.Lock()
_runtime = None
_last: tuple[str, tuple[BaseTool, ...]] | None = None


def get_runtime():
    global _runtime
    from harness.mcp.runtime import McpRuntime

    with _lock:
        if _runtime is None:
            _runtime = McpRuntime()
            # stdio servers run in sessions of their own, so they would outlive this process
            # (and keep their resources) unless their sessions are closed on the way out.
            atexit.register(reset_mcp)
        return _runtime


def _policy(app_config: Any = None):
    from harness.config import get_app_config
    from harness.net.guard import GuardPolicy

    cfg = app_config or get_app_config()
    return GuardPolicy.from_networks(cfg.web.allowed_private_networks)


def _enabled(extensions: ExtensionsConfig) -> dict[str, McpServerConfig]:
    return {name: cfg for name, cfg in extensions.mcp_servers.items() if cfg.enabled}


def _needs_retry(rt) -> bool:
    from harness.mcp.runtime import RETRY_AFTER_SECONDS

    now = time.monotonic()
    return any(s.status == "error" and now - s.failed_at_monotonic > RETRY_AFTER_SECONDS for s in rt.servers.values())


def get_mcp_tools(extensions: ExtensionsConfig | None = None, *, app_config: Any = None,
                  retry: bool = False) -> tuple[BaseTool, ...]:
    """The enabled servers' tools. Blocks while servers connect: call it off the event loop
    (the run engine warms it in a worker thread before building a graph)."""
    global _last
    from harness.config import get_extensions_config
    from harness.mcp.tools import wrap_tool

    ext = extensions if extensions is not None else get_extensions_config()
    wanted = _enabled(ext)
    if not wanted and _runtime is None:
        return ()
    policy = _policy(app_config)
    rt = get_runtime()
    key = hashlib.sha256(json.dumps([sorted(wanted), [str(n) for n in policy.allowed_networks],
                                     [c.model_dump(mode="json") for c in wanted.values()],
                                     [c.unresolved for c in wanted.values()]], default=str).encode()).hexdigest()
    last = _last
    if not retry and last is not None and last[0] == key and not _needs_retry(rt) and last[1]._ready == _fingerprint(key, rt):
        return last[1]
    rt.submit(rt.sync(wanted, policy, retry=retry))
    tools: list[BaseTool] = []
    for name, state in list(rt.servers.items()):
        tools += [wrap_tool(rt, name, state.config, t) for t in state.tools.values()]
    full_key = _fingerprint(key, rt)
    if last is not None and last[0] == key and last[1]._ready == full_key:
        return last[1]
    result = _ToolSet(tools)
    result._ready = full_key
    _last = (key, result)
    return result


def _fingerprint(key: str, rt) -> str:
    # Which servers are ready with which tools: a server that came back in the background
    # changes it, so the next build gets its tools.
    ready = [(n, s.status == "ready", tuple(s.tools)) for n, s in list(rt.servers.items())]
    return f"{key}{ready}"


class _ToolSet(tuple):
    """A tuple that can carry the readiness it was built from (to keep its identity)."""

    _ready: str = ""


def mcp_status(extensions: ExtensionsConfig | None = None) -> list[dict[str, Any]]:
    """One entry per configured server: disabled, not loaded yet, or the live state."""
    from harness.config import get_extensions_config

    ext = extensions if extensions is not None else get_extensions_config()
    live = _runtime.servers if _runtime is not None else {}
    out = []
    for name, cfg in ext.mcp_servers.items():
        if not cfg.enabled:
            out.append({"name": name, "type": cfg.type, "enabled": False, "status": "disabled", "last_error": None,
                        "error_at": None, "connected_at": None, "tools": []})
        elif name in live:
            out.append(live[name].as_dict())
        else:
            out.append({"name": name, "type": cfg.type, "enabled": True, "status": "not_loaded",
                        "last_error": cfg.unresolved, "error_at": None, "connected_at": None, "tools": []})
    return out


def close_thread_sessions(thread_id: str) -> Future | None:
    """Close the thread's own MCP server processes (``session_scope: thread``), for a deleted
    thread. Does not wait: the answer is a future of how many closed, or None when this
    process runs no MCP sessions (nothing is started for the asking)."""
    rt = _runtime
    if rt is None or rt._loop is None or not any(s.threads for s in list(rt.servers.values())):
        return None
    return asyncio.run_coroutine_threadsafe(rt.close_thread(thread_id), rt._loop)


def reset_mcp() -> None:
    """Stop every session (tests, shutdown)."""
    global _runtime, _last
    with _lock:
        rt, _runtime, _last = _runtime, None, None
    if rt is not None and rt._loop is not None:
        rt.submit(rt.shutdown())
        rt._loop.call_soon_threadsafe(rt._loop.stop)
