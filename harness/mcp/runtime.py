"""MCP sessions on a loop of their own, one long-lived session per server.

Why a dedicated thread and loop: agent graphs are built synchronously (on whatever thread
builds them) while tool calls run on the run engine's loop, and an MCP session's streams
belong to the loop that opened them. Keeping every session on one private loop lets any
caller (a worker thread, the run loop, the embedded client) use them, and a tool call is
handed over with ``run_coroutine_threadsafe``. Sessions stay open between runs, so a run
never reconnects.

Isolation: each server connects in its own task under its own deadline. A server that
fails to start, times out or crashes is marked ``error`` with the reason, the time and the
last lines of its stderr, and the others load regardless. A tool call that outlives
``tool_call_timeout`` closes that server's session, which kills a stdio server's whole
process group (the ``mcp`` client starts it in a new session and terminates the group on
close); the next call reconnects.

Per-thread sessions (``session_scope: thread``, stdio only): the server's own session lists
its tools and is closed; each (user, thread) that calls one of them gets a process of its
own, started in that thread's workspace and kept for the thread's later calls, so a server
that keeps state (a browser, a REPL) keeps it per conversation and never across users. Each
such session is owned by one task (anyio needs a session entered and left by the same task)
that closes it after ``session_idle_timeout`` without a call, when the thread is deleted, or
when the server's entry changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from harness.config.extensions import McpServerConfig
from harness.config.paths import thread_user_data_dir
from harness.mcp.stderr import StderrTail, with_stderr
from harness.net.guard import GuardPolicy

logger = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT = 30.0
DEFAULT_TOOL_CALL_TIMEOUT = 300.0
# A failed server is retried by the next agent build after this long, not on every build.
RETRY_AFTER_SECONDS = 30.0
# Per-thread processes of one server at most; past it the least recently used one closes.
MAX_THREAD_SESSIONS = 64
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def server_signature(config: McpServerConfig, policy: GuardPolicy) -> str:
    raw = json.dumps([config.model_dump(mode="json"), config.unresolved, [str(n) for n in policy.allowed_networks]],
                     sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass
class ThreadSession:
    """One (user, thread)'s own process of a ``session_scope: thread`` server."""

    key: tuple[str, str]
    workspace: Path | None
    status: str = "connecting"
    last_error: str | None = None
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    tools: dict[str, BaseTool] = field(default_factory=dict)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task | None = None
    stderr: StderrTail | None = None


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
    stderr: StderrTail | None = None
    threads: dict[tuple[str, str], ThreadSession] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.config.type, "enabled": True, "status": self.status,
                "last_error": self.last_error, "error_at": self.error_at, "connected_at": self.connected_at,
                "tools": list(self.tool_info), "session_scope": self.config.session_scope,
                "thread_sessions": sum(1 for t in list(self.threads.values()) if t.status == "ready")}


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
        await _finish(state.task)
        state.task = None
        await asyncio.gather(*(self._stop_thread(state, ts) for ts in list(state.threads.values())))

    async def _connect(self, stack: AsyncExitStack, state: ServerState, tail: StderrTail | None,
                       workspace: Path | None = None) -> list[BaseTool]:
        """Open a session (closed with ``stack``) and load its tools. A stdio server's stderr
        goes to ``tail``, which the caller finishes once the session is closed."""
        from langchain_mcp_adapters.client import MultiServerMCPClient
        from langchain_mcp_adapters.tools import load_mcp_tools

        from harness.mcp.connections import build_connection

        cfg = state.config
        if cfg.unresolved:
            raise ValueError(cfg.unresolved)
        connection = await asyncio.to_thread(build_connection, state.name, cfg, state.policy, workspace)
        if tail is not None:
            from mcp import ClientSession, StdioServerParameters
            from mcp.client.stdio import stdio_client

            await tail.start()
            params = StdioServerParameters(command=connection["command"], args=connection["args"],
                                           env=connection["env"], cwd=connection["cwd"])
            try:
                read, write = await stack.enter_async_context(stdio_client(params, errlog=tail.child_end))
            finally:
                tail.spawned()
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
        else:
            client = MultiServerMCPClient({state.name: connection})
            session = await stack.enter_async_context(client.session(state.name))
        tools = await load_mcp_tools(session, server_name=state.name)
        return [t for t in tools if cfg.tools.permits(t.name)]

    async def _serve(self, state: ServerState) -> None:
        cfg = state.config
        timeout = cfg.connect_timeout or DEFAULT_CONNECT_TIMEOUT
        state.stderr = StderrTail(state.name) if cfg.type == "stdio" else None
        try:
            async with AsyncExitStack() as stack:
                async with asyncio.timeout(timeout):
                    tools = await self._connect(stack, state, state.stderr)
                state.tools = {t.name: t for t in tools}
                state.tool_info = [{"name": t.name, "description": t.description or ""} for t in state.tools.values()]
                state.status, state.last_error, state.connected_at = "ready", None, _now()
                logger.info("MCP server %s: %d tools", state.name, len(state.tools))
                if cfg.session_scope == "thread":
                    # The listing was all this process was for: each thread starts its own.
                    await stack.aclose()
                    await _drain(state.stderr)
                state.ready.set()
                await state.stop.wait()
        except asyncio.CancelledError:
            self._fail(state, "stopped")
            raise
        except BaseException as exc:  # noqa: BLE001 - one server's failure must stay its own
            if isinstance(_leaf(exc), TimeoutError):
                reason = f"no answer within {timeout:g} seconds"
            else:
                reason = _describe(exc)
            if state.stop is None or not state.stop.is_set():
                await _drain(state.stderr)
                self._fail(state, with_stderr(reason, state.stderr))
                logger.warning("MCP server %s failed: %s", state.name, state.last_error)
        finally:
            if state.status == "ready":
                state.status = "stopped"
            if state.ready is not None:
                state.ready.set()
            await _drain(state.stderr)

    def _fail(self, state: ServerState, reason: str) -> None:
        state.status, state.last_error, state.error_at = "error", reason, _now()
        state.failed_at_monotonic = time.monotonic()

    async def call(self, server: str, tool: str, arguments: dict[str, Any], timeout: float,
                   scope: tuple[str, str] | None = None) -> Any:
        """One tool call, on the MCP loop. A closed session (after a timeout or crash) is
        reopened first, once. ``scope``: the caller's (user id, thread id), which picks the
        thread's own process on a ``session_scope: thread`` server."""
        state = self.servers.get(server)
        if state is None:
            raise RuntimeError(f"MCP server '{server}' is not configured any more")
        if state.status != "ready":
            await self._stop(state)
            self._start(state)
            await state.ready.wait()
            if state.status != "ready":
                raise RuntimeError(f"MCP server '{server}' is unavailable: {state.last_error}")
        if state.config.session_scope == "thread":
            return await self._call_in_thread(state, tool, arguments, timeout, scope)
        done, result = await _invoke(server, state.tools, tool, arguments, timeout)
        if done:
            return result
        reason = result
        await self._stop(state)
        self._fail(state, with_stderr(reason, state.stderr))
        raise RuntimeError(state.last_error)

    # -- per-thread sessions --------------------------------------------------------------

    def _thread_session(self, state: ServerState, scope: tuple[str, str] | None) -> ThreadSession:
        user, thread = scope or ("", "")
        key = (user, thread) if _SAFE_ID.match(user) and _SAFE_ID.match(thread) else ("", "")
        ts = state.threads.get(key)
        if ts is not None and ts.status in ("connecting", "ready"):
            return ts
        workspace = thread_user_data_dir(key[0], key[1]) / "workspace" if key[1] else None
        ts = state.threads[key] = ThreadSession(key, workspace)
        ts.task = asyncio.get_running_loop().create_task(self._serve_thread(state, ts), name=f"mcp-{state.name}-{key[1]}")
        idle = sorted((t for t in state.threads.values() if t.busy == 0 and t is not ts), key=lambda t: t.last_used)
        for old in idle[:max(0, len(state.threads) - MAX_THREAD_SESSIONS)]:
            old.status = "closing"
            old.stop.set()
        return ts

    async def _call_in_thread(self, state: ServerState, tool: str, arguments: dict[str, Any], timeout: float,
                              scope: tuple[str, str] | None) -> Any:
        ts = self._thread_session(state, scope)
        ts.busy += 1  # before any await: the idle check then leaves this session open
        try:
            await ts.ready.wait()
            if ts.status != "ready":
                raise RuntimeError(f"MCP server '{state.name}' could not start for this thread: {ts.last_error}")
            done, result = await _invoke(state.name, ts.tools, tool, arguments, timeout)
            if done:
                return result
            reason = result
        finally:
            ts.busy -= 1
            ts.last_used = time.monotonic()
        ts.status = "error"
        await self._stop_thread(state, ts)
        raise RuntimeError(with_stderr(reason, ts.stderr))

    async def _serve_thread(self, state: ServerState, ts: ThreadSession) -> None:
        timeout = state.config.connect_timeout or DEFAULT_CONNECT_TIMEOUT
        ts.stderr = StderrTail(state.name)
        try:
            async with AsyncExitStack() as stack:
                async with asyncio.timeout(timeout):
                    tools = await self._connect(stack, state, ts.stderr, ts.workspace)
                ts.tools = {t.name: t for t in tools}
                ts.status = "ready"
                ts.ready.set()
                logger.info("MCP server %s: a session for thread %s started", state.name, ts.key[1] or "-")
                await _until_idle(ts, state.config.session_idle_timeout)
        except asyncio.CancelledError:
            ts.status = "stopped"
            raise
        except BaseException as exc:  # noqa: BLE001 - one thread's process failing stays its own
            reason = f"no answer within {timeout:g} seconds" if isinstance(_leaf(exc), TimeoutError) else _describe(exc)
            await _drain(ts.stderr)
            ts.status, ts.last_error = "error", with_stderr(reason, ts.stderr)
            logger.warning("MCP server %s failed for thread %s: %s", state.name, ts.key[1] or "-", ts.last_error)
        finally:
            if ts.status in ("ready", "closing"):
                ts.status = "stopped"
            ts.ready.set()
            await _drain(ts.stderr)
            if state.threads.get(ts.key) is ts:
                del state.threads[ts.key]

    async def _stop_thread(self, state: ServerState, ts: ThreadSession) -> None:
        if ts.status in ("connecting", "ready"):
            ts.status = "closing"
        ts.stop.set()
        await _finish(ts.task)
        if state.threads.get(ts.key) is ts:
            del state.threads[ts.key]

    async def close_thread(self, thread_id: str) -> int:
        """Close every server's session of this thread (it was deleted); how many closed."""
        found = [(state, ts) for state in list(self.servers.values()) for ts in list(state.threads.values())
                 if ts.key[1] == thread_id]
        await asyncio.gather(*(self._stop_thread(state, ts) for state, ts in found))
        return len(found)

    async def shutdown(self) -> None:
        for state in list(self.servers.values()):
            await self._stop(state)
        self.servers.clear()


async def _invoke(server: str, tools: dict[str, BaseTool], tool: str, arguments: dict[str, Any],
                  timeout: float) -> tuple[bool, Any]:
    """(True, the result) or (False, why the session failed): a tool-level error comes back
    as content; a timeout or a broken connection means the session must be restarted."""
    target = tools.get(tool)
    if target is None:
        raise RuntimeError(f"MCP server '{server}' no longer offers the tool '{tool}'")
    try:
        async with asyncio.timeout(timeout):
            return True, await target.coroutine(**arguments)
    except TimeoutError:
        return False, f"the tool '{tool}' did not answer within {timeout:g} seconds; the server process was restarted"
    except Exception as exc:  # noqa: BLE001 - the transport failed, not the tool
        return False, f"the connection failed during '{tool}': {_describe(exc)}"


async def _finish(task: asyncio.Task | None) -> None:
    if task is not None and not task.done():
        try:
            await asyncio.wait_for(asyncio.shield(task), 10)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()


async def _until_idle(ts: ThreadSession, idle: float) -> None:
    """Return when the session is to close: asked to, or ``idle`` seconds without a call."""
    while not ts.stop.is_set():
        remaining = idle - (time.monotonic() - ts.last_used)
        if ts.busy == 0 and remaining <= 0:
            ts.status = "closing"  # no await since the check: a new call starts another session
            return
        try:
            await asyncio.wait_for(ts.stop.wait(), max(remaining, 1.0))
        except TimeoutError:
            pass


async def _drain(tail: StderrTail | None) -> None:
    if tail is not None:
        await tail.finish()


def _leaf(exc: BaseException) -> BaseException:
    # anyio wraps a failure inside a task group in an ExceptionGroup: the cause is inside.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    exc = _leaf(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
