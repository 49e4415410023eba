"""MCP sessions on a loop of their own, one long-lived session per server.

Why a dedicated thread and loop: agent graphs are built synchronously (on whatever thread
builds them) while tool calls run on the run engine's loop, and an MCP session's streams
belong to the loop that opened them. Keeping every session on one private loop lets any
caller (a worker thread, the run loop, the embedded client) use them, and a tool call is
handed over with ``run_coroutine_threadsafe``. Sessions stay open between runs, so a run
never reconnects.

Isolation: each server connects in its own task under its own deadline. A server that
fails to start, times out or crashes is marked ``error`` with the reason and the time, and
the others load regardless. A tool call that outlives ``tool_call_timeout`` closes that
server's session, which kills a stdio server's whole process group (the ``mcp`` client
starts it in a new session and terminates the group on close); the next call reconnects.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langchain_core.tools import BaseTool

from harness.config.extensions import McpServerConfig
from harness.net.guard import GuardPolicy

logger = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT = 30.0
DEFAULT_TOOL_CALL_TIMEOUT = 300.0
# A failed server is retried by the next agent build after this long, not on every build.
RETRY_AFTER_SECONDS = 30.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def server_signature(config: McpServerConfig, policy: GuardPolicy) -> str:
    raw = json.dumps([config.model_dump(mode="json"), config.unresolved, [str(n) for n in policy.allowed_networks]],
                     sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass
class ServerState:
    name: str
    config: McpServerConfig
    signature: str
    policy: GuardPolicy
    status: str = "pending"
    last_error: str | None = None
    error_at: str | None = None
    connected_at: str | None = None
    failed_at_monotonic: float = 0.0
    tools: dict[str, BaseTool] = field(default_factory=dict)
    tool_info: list[dict[str, Any]] = field(default_factory=list)
    task: asyncio.Task | None = None
    ready: asyncio.Event | None = None
    stop: asyncio.Event | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.config.type, "enabled": True, "status": self.status,
                "last_error": self.last_error, "error_at": self.error_at, "connected_at": self.connected_at,
                "tools": list(self.tool_info)}


class McpRuntime:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.servers: dict[str, ServerState] = {}

    # -- the loop -----------------------------------------------------------------------

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._start_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="mcp-sessions", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def submit(self, coro) -> Any:
        """Run ``coro`` on the MCP loop and wait for it (from a thread that is not that loop)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def run(self, coro) -> Any:
        """Await ``coro`` on the MCP loop from another loop without blocking it."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    # -- servers ------------------------------------------------------------------------

    async def sync(self, wanted: dict[str, McpServerConfig], policy: GuardPolicy, *, retry: bool = False) -> None:
        """Make the running servers match ``wanted`` (enabled servers only): stop removed or
        changed ones, start new ones, and wait until each is ready or has failed."""
        signatures = {name: server_signature(cfg, policy) for name, cfg in wanted.items()}
        for name in list(self.servers):
            if signatures.get(name) != self.servers[name].signature:
                await self._stop(self.servers.pop(name))
        now = time.monotonic()
        waiting = []
        for name, cfg in wanted.items():
            state = self.servers.get(name)
            if state is None:
                state = self.servers[name] = ServerState(name, cfg, signatures[name], policy)
                self._start(state)
                waiting.append(state)
            elif state.status == "error" and (retry or now - state.failed_at_monotonic > RETRY_AFTER_SECONDS):
                await self._stop(state)
                self._start(state)
                # A periodic retry reconnects in the background: a server that stays down
                # must not hold up every agent build by its connect timeout. Its tools join
                # the next build after it comes back.
                if retry:
                    waiting.append(state)
            elif state.status == "connecting" and state.last_error is None:
                waiting.append(state)  # another build's first connect: its tools are due now
        if waiting:
            await asyncio.gather(*(s.ready.wait() for s in waiting))

    def _start(self, state: ServerState) -> None:
        state.status = "connecting"
        state.ready, state.stop = asyncio.Event(), asyncio.Event()
        state.task = asyncio.get_running_loop().create_task(self._serve(state), name=f"mcp-{state.name}")

    async def _stop(self, state: ServerState) -> None:
        if state.stop is not None:
            state.stop.set()
        task = state.task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 10)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
        state.task = None

    async def _serve(self, state: ServerState) -> None:
        from langchain_mcp_adapters.client import MultiServerMCPClient
        from langchain_mcp_adapters.tools import load_mcp_tools

        from harness.mcp.connections import build_connection

        cfg = state.config
        timeout = cfg.connect_timeout or DEFAULT_CONNECT_TIMEOUT
        try:
            if cfg.unresolved:
                raise ValueError(cfg.unresolved)
            connection = await asyncio.to_thread(build_connection, state.name, cfg, state.policy)
            client = MultiServerMCPClient({state.name: connection})
            async with AsyncExitStack() as stack:
                async with asyncio.timeout(timeout):
                    session = await stack.enter_async_context(client.session(state.name))
                    tools = await load_mcp_tools(session, server_name=state.name)
                state.tools = {t.name: t for t in tools if cfg.tools.permits(t.name)}
                state.tool_info = [{"name": t.name, "description": t.description or ""} for t in state.tools.values()]
                state.status, state.last_error, state.connected_at = "ready", None, _now()
                logger.info("MCP server %s: %d tools", state.name, len(state.tools))
                state.ready.set()
                await state.stop.wait()
        except asyncio.CancelledError:
            self._fail(state, "stopped")
            raise
        except BaseException as exc:  # noqa: BLE001 - one server's failure must stay its own
            if isinstance(exc, TimeoutError):
                reason = f"no answer within {timeout:g} seconds"
            else:
                reason = _describe(exc)
            if state.stop is None or not state.stop.is_set():
                self._fail(state, reason)
                logger.warning("MCP server %s failed: %s", state.name, reason)
        finally:
            if state.status == "ready":
                state.status = "stopped"
            if state.ready is not None:
                state.ready.set()

    def _fail(self, state: ServerState, reason: str) -> None:
        state.status, state.last_error, state.error_at = "error", reason, _now()
        state.failed_at_monotonic = time.monotonic()

    async def call(self, server: str, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        """One tool call, on the MCP loop. A closed session (after a timeout or crash) is
        reopened first, once."""
        state = self.servers.get(server)
        if state is None:
            raise RuntimeError(f"MCP server '{server}' is not configured any more")
        if state.status != "ready":
            await self._stop(state)
            self._start(state)
            await state.ready.wait()
            if state.status != "ready":
                raise RuntimeError(f"MCP server '{server}' is unavailable: {state.last_error}")
        target = state.tools.get(tool)
        if target is None:
            raise RuntimeError(f"MCP server '{server}' no longer offers the tool '{tool}'")
        try:
            async with asyncio.timeout(timeout):
                return await target.coroutine(**arguments)
        except TimeoutError:
            reason = f"the tool '{tool}' did not answer within {timeout:g} seconds; the server was restarted"
        except Exception as exc:  # noqa: BLE001 - tool-level errors come back as content; this is the transport
            reason = f"the connection failed during '{tool}': {_describe(exc)}"
        await self._stop(state)
        self._fail(state, reason)
        raise RuntimeError(reason)

    async def shutdown(self) -> None:
        for state in list(self.servers.values()):
            await self._stop(state)
        self.servers.clear()


def _describe(exc: BaseException) -> str:
    # anyio wraps a failure inside a task group in an ExceptionGroup: report the cause.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
