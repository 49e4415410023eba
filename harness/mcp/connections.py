"""Turning one ``mcpServers`` entry into a ``langchain-mcp-adapters`` connection.

stdio servers get the sandbox's environment policy (an allow-list of the server's own
environment, then the entry's ``env``), a private temp directory and, unless ``cwd`` is
set, a private working directory; a server with ``session_scope: thread`` gets, per thread,
the thread's workspace as its working directory and ``workspace/.mcp/tmp`` as its temp
directory (DeerFlow's layout), so files it writes are the thread's files. HTTP and SSE servers connect through the SSRF guard,
so a URL pointing at a private address is refused unless ``web.allowed_private_networks``
opens it; an ``oauth`` block adds a bearer token from its token endpoint.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import httpx

from harness.config.extensions import McpServerConfig
from harness.config.paths import deer_flow_home
from harness.mcp.oauth import OAuthTokenAuth
from harness.net.guard import MAX_REDIRECTS, GuardedTransport, GuardPolicy, check_url
from harness.sandbox.env_policy import HOST_RUNTIME_NAMES, build_sandbox_env

DEFAULT_HTTP_TIMEOUT = 30.0
_EMBEDDED_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def expand_embedded(value: str) -> str:
    """``"Bearer $API_TOKEN"``: whole-value references are resolved when the file is read;
    a reference inside a longer value is resolved here, and a missing one is an error."""
    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ValueError(f"environment variable {name} is not set")
        return os.environ[name]
    return _EMBEDDED_VAR.sub(sub, value)


def server_dirs(name: str) -> tuple[Path, Path]:
    """(work dir, temp dir) private to one stdio server, owner-only."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    root = deer_flow_home() / "mcp" / safe
    tmp = root / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    for path in (root, tmp):
        os.chmod(path, 0o700)
    return root, tmp


def thread_dirs(workspace: Path) -> tuple[Path, Path]:
    """(work dir, temp dir) of one thread's session: the workspace and a private temp dir in it."""
    tmp = workspace / ".mcp" / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    os.chmod(tmp, 0o700)
    return workspace, tmp


def stdio_env(config: McpServerConfig, tmp: Path) -> dict[str, str]:
    temp = {"TMPDIR": str(tmp), "TMP": str(tmp), "TEMP": str(tmp)}
    extra = {k: expand_embedded(v) for k, v in config.env.items()}
    return build_sandbox_env(passthrough=HOST_RUNTIME_NAMES, overrides=temp, extra=extra)


def guarded_factory(policy: GuardPolicy):
    def factory(headers: dict[str, str] | None = None, timeout: httpx.Timeout | None = None,
                auth: httpx.Auth | None = None) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=GuardedTransport(policy), headers=headers,
                                 timeout=timeout or httpx.Timeout(DEFAULT_HTTP_TIMEOUT), auth=auth,
                                 follow_redirects=True, max_redirects=MAX_REDIRECTS, trust_env=False)
    return factory


def build_connection(name: str, config: McpServerConfig, policy: GuardPolicy,
                     workspace: Path | None = None) -> dict[str, Any]:
    """``workspace``: the calling thread's, for a thread's own stdio session."""
    if config.type == "stdio":
        work, tmp = thread_dirs(workspace) if workspace is not None else server_dirs(name)
        return {"transport": "stdio", "command": config.command, "args": list(config.args),
                "env": stdio_env(config, tmp), "cwd": config.cwd or str(work)}
    check_url(config.url or "")
    transport = "sse" if config.type == "sse" else "streamable_http"
    connection: dict[str, Any] = {"transport": transport, "url": config.url,
                                  "headers": {k: expand_embedded(v) for k, v in config.headers.items()},
                                  "httpx_client_factory": guarded_factory(policy)}
    if config.oauth is not None and config.oauth.enabled:
        connection["auth"] = OAuthTokenAuth(config.oauth, policy)
    return connection
