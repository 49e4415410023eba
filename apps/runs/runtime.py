"""The process's runs loop: where graphs execute and the checkpointer lives.

Runs execute on one dedicated asyncio loop in a background thread, not on the ASGI loop of
the request that started them: a run outlives its request, sync views (and the sync test
client) can start and cancel runs, and the checkpointer's connection stays on one loop.
Requests talk to it through ``call`` / ``acall`` and read events through the stream bridge,
which is safe across loops.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import json
import logging
import os
import socket
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from channels.db import DatabaseSyncToAsync
from django.conf import settings

from harness.runtime.checkpointer import open_checkpointer
from harness.config.paths import deer_flow_home
from harness.runtime.stream_bridge import MemoryStreamBridge, StreamBridge
from deerflow_site.server.stream_relay import RelayedStreamBridge, relay_directory

logger = logging.getLogger(__name__)

T = TypeVar("T")

_HOST = socket.gethostname()


def process_id() -> str:
    """This process as run leases and hand-offs name it (``host:pid``). Asked for each time, not
    kept from import: the web launcher sets Django up and then forks the servers and the Celery
    worker from it (deerflow_site/server/web_processes.py), and each is a process of its own."""
    return f"{_HOST}:{os.getpid()}"

# Redis pub/sub channel on which cancels reach the process executing the run.
CANCEL_CHANNEL = "deerflow:runs:cancel"
# The cancel action of a server shutting down (apps/runs/shutdown.py): the worker stops without
# settling the run, and recovery settles it.
HANDOFF = "handoff"
# How long the loop's thread gets at the interpreter's exit to leave the loop.
EXIT_STOP_SECONDS = 3.0


# What runs beside the runs on their loop (the recovery sweep, the lease keeper), added by the
# runs app when Django starts (apps/runs/apps.py). The runtime starts each with its loop but
# does not know what they are: it must not import the code it executes.
LoopService = Callable[["RunsRuntime"], Awaitable[None]]
_loop_services: dict[str, LoopService] = {}


def add_loop_service(name: str, service: LoopService) -> None:
    """Run ``service(runtime)`` on every runtime's loop from its start until it stops."""
    _loop_services[name] = service


def _new_event_loop() -> asyncio.AbstractEventLoop:
    # A run schedules thousands of loop callbacks (graph steps, bridge wake-ups, thread-pool
    # results); uvloop's cost less: about 4 % of a run's CPU in bursts (benchmarks/HISTORY.md, round 3).
    try:
        import uvloop
    except ImportError:  # no build for this platform (Windows): the standard loop does the same
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _make_bridge() -> StreamBridge:
    if settings.RUN_STREAM_BRIDGE == "redis":
        from harness.runtime.redis_bridge import RedisStreamBridge

        return RedisStreamBridge(settings.REDIS_URL)
    # Several server processes may share the port (WEB_PROCESSES): a run another one holds is
    # read through it (deerflow_site/server/stream_relay.py).
    return RelayedStreamBridge(MemoryStreamBridge(), relay_directory(deer_flow_home()))


def database_sync_to_async(fn):
    """ORM calls from the runs loop. Not thread-sensitive: the runs loop is not inside any
    request's sync context, and one shared thread would serialize every run's writes."""
    return DatabaseSyncToAsync(fn, thread_sensitive=False)


@dataclass
class ActiveRun:
    task: asyncio.Task
    cancel_action: str | None = None
    started: bool = False
    # Set by the worker once it is handling a cancel (or finishing anyway): from then on a
    # repeated cancel must not interrupt its cleanup.
    settling: bool = False
    # Claimed by this process: the lease keeper renews its lease and looks for its cancel flag.
    leased: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)


class RunsRuntime:
    def __init__(self, checkpointer_url: str):
        self.checkpointer_url = checkpointer_url
        self.bridge = _make_bridge()
        self.active: dict[str, ActiveRun] = {}
        # Request-scoped secrets live only here, for the life of the run: never in a row.
        self.secrets: dict[str, dict[str, str]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._checkpointer: Any = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._checkpointer_opening: asyncio.Lock | None = None
        self._lock = threading.Lock()
        self._background: set[asyncio.Task] = set()
        # False in a process that answers no HTTP or websocket (a Celery worker): a run it
        # admits is offered to the servers on the embedded stack (apps/runs/handoff.py).
        self.serves_streams = True

    # -- the loop ----------------------------------------------------------------------

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            with self._lock:
                if self._loop is None:
                    ready = threading.Event()
                    loop = _new_event_loop()

                    def _run() -> None:
                        asyncio.set_event_loop(loop)
                        loop.call_soon(ready.set)
                        loop.run_forever()

                    self._thread = threading.Thread(target=_run, name="deerflow-runs", daemon=True)
                    self._thread.start()
                    ready.wait()
                    self._loop = loop
                    # uvloop wakes its thread for a timer (the hand-off poll, twice a second)
                    # from C: woken late in the interpreter's finalization, it asks for a thread
                    # state that no longer exists, and the process ends with SIGSEGV instead of
                    # its exit code. Stopped before finalization, the thread is gone by then.
                    atexit.register(self._stop_at_exit)
                    for name, service in _loop_services.items():
                        loop.call_soon_threadsafe(self._keep_running, functools.partial(service, self), name)
                    if self.distributed:
                        loop.call_soon_threadsafe(self._keep_running, self._listen_for_cancels, "run-cancels")
        return self._loop

    def stop(self, timeout: float = 5.0) -> None:
        """End the runs loop: its background tasks (recovery sweep, lease keeper, cancel
        listener) are cancelled and the checkpointer closed. For a test session that is about to
        drop its database; a process that exits only stops the loop (``_stop_at_exit``)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        atexit.unregister(self._stop_at_exit)

        async def _wind_down() -> None:
            for task in list(self._background):
                task.cancel()
            await asyncio.gather(*self._background, return_exceptions=True)
            if self._stack is not None:
                await self._stack.aclose()

        try:
            asyncio.run_coroutine_threadsafe(_wind_down(), loop).result(timeout)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            self._loop = self._thread = self._checkpointer = self._stack = None

    def _stop_at_exit(self) -> None:
        # Only the loop stops, as the process leaves: the thread pools that the saver's close and
        # the background tasks' clean-up would use are shut down before atexit handlers run.
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(EXIT_STOP_SECONDS)
        if thread.is_alive():
            logger.warning("The runs loop did not stop within %ss of the exit", EXIT_STOP_SECONDS)

    def serve_streams_to_peers(self) -> None:
        """At a server's startup on the embedded stack: answer the installation's other server
        processes about the runs executing here (their streams, their cancels)."""
        if isinstance(self.bridge, RelayedStreamBridge):
            relay = self.bridge.relay(on_cancel=self.cancel_here)
            self.keep_running(relay.serve_forever, "run-stream-relay")

    def keep_running(self, fn: Callable[[], Awaitable[None]], name: str) -> None:
        """Run ``fn`` as a background task of the runs loop until the runtime stops."""
        self.loop.call_soon_threadsafe(self._keep_running, fn, name)

    def _keep_running(self, fn: Callable[[], Awaitable[None]], name: str) -> None:
        # The loop holds tasks weakly: without this reference a background task can be
        # garbage-collected mid-await.
        self._background.add(asyncio.get_running_loop().create_task(fn(), name=name))

    @property
    def distributed(self) -> bool:
        """Whether other processes may execute runs and serve their streams (Redis set up)."""
        return settings.RUN_STREAM_BRIDGE == "redis"

    def submit_coro(self, coro: Awaitable[T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, timeout: float | None = 60, **kwargs: Any) -> T:
        """Run ``fn`` on the runs loop and wait for it (from sync code)."""
        return self.submit_coro(fn(*args, **kwargs)).result(timeout)

    async def acall(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the runs loop from another loop."""
        return await asyncio.wrap_future(self.submit_coro(fn(*args, **kwargs)))

    async def checkpointer(self) -> Any:
        """The process-wide saver; opened on first use, on the runs loop. Runs that start
        together wait for the one opening it: two savers would each own a connection, and
        the one dropped would close under the runs using it."""
        if self._checkpointer is None:
            if self._checkpointer_opening is None:
                self._checkpointer_opening = asyncio.Lock()
            async with self._checkpointer_opening:
                if self._checkpointer is None:
                    stack = contextlib.AsyncExitStack()
                    self._checkpointer = await stack.enter_async_context(open_checkpointer(self.checkpointer_url))
                    self._stack = stack
        return self._checkpointer

    # -- runs --------------------------------------------------------------------------

    def _register(self, run_id: str, runner: Callable[[str], Awaitable[None]]) -> ActiveRun:
        """On the runs loop: start the run's task and track it until it is done."""
        task = self.loop.create_task(runner(run_id), name=f"run-{run_id}")
        entry = ActiveRun(task=task)
        self.active[run_id] = entry

        def _done(_t: asyncio.Task) -> None:
            entry.done.set()
            self.active.pop(run_id, None)
            self.secrets.pop(run_id, None)

        task.add_done_callback(_done)
        return entry

    def start(self, run_id: str, runner: Callable[[str], Awaitable[None]]) -> None:
        self.loop.call_soon_threadsafe(self._register, run_id, runner)

    def run_to_completion(self, run_id: str, runner: Callable[[str], Awaitable[None]]) -> None:
        """Execute the run here and block the calling (non-loop) thread until it is done."""

        async def _run() -> None:
            await self._register(run_id, runner).done.wait()

        self.call(_run, timeout=None)

    def cancel_here(self, run_id: str, action: str) -> bool:
        """On the runs loop: cancel the run if this process executes it. Repeating it is how a
        cancel that got lost is delivered again (asgiref can swallow one that lands while the
        run awaits a database call); the first action asked for is the one carried out."""
        entry = self.active.get(run_id)
        if entry is None:
            return False
        entry.cancel_action = entry.cancel_action or action
        # A task cancelled before its first step never runs its cleanup: the worker checks
        # cancel_action when it starts instead.
        if entry.started and not entry.settling:
            entry.task.cancel()
        return True

    def mark_settling(self, run_id: str) -> None:
        entry = self.active.get(run_id)
        if entry is not None:
            entry.settling = True

    def hold_lease(self, run_id: str) -> None:
        entry = self.active.get(run_id)
        if entry is not None:
            entry.leased = True

    def held_runs(self) -> list[str]:
        """Runs this process has claimed and not yet begun to settle."""
        return [run_id for run_id, entry in self.active.items() if entry.leased and not entry.settling]

    def cancel(self, run_id: str, action: str) -> bool:
        """Cancel a run executing in this process; False when it is not here."""

        async def _cancel() -> bool:
            return self.cancel_here(run_id, action)

        return self.call(_cancel, timeout=10)

    def broadcast_cancel(self, run_id: str, action: str) -> None:
        """Ask whichever process executes the run to cancel it: over Redis when distributed,
        else through this installation's other server processes (the executing process also
        looks for the database flag every second)."""
        if not self.distributed:
            if isinstance(self.bridge, RelayedStreamBridge):
                self.bridge.cancel_elsewhere(run_id, action)
            return
        self.publish(CANCEL_CHANNEL, {"run_id": run_id, "action": action})

    def publish(self, channel: str, message: dict) -> None:
        """Tell every process of a distributed installation (servers and Celery workers, each
        listening through ``listen``) something: over Redis pub/sub. Blocking: call it from
        sync code."""
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL)
        try:
            client.publish(channel, json.dumps(message))
        finally:
            client.close()

    async def listen(self, channel: str, handle: Callable[[dict], Any], what: str) -> None:
        """On the runs loop, until cancelled: ``handle(message)`` for each message published on
        ``channel``; a malformed one (``handle`` raising KeyError/TypeError/ValueError) is
        logged and skipped, and a lost Redis is waited for."""
        import redis.asyncio as aioredis

        while True:
            try:
                client = aioredis.from_url(settings.REDIS_URL)
                try:
                    async with client.pubsub() as pubsub:
                        await pubsub.subscribe(channel)
                        async for message in pubsub.listen():
                            if message.get("type") != "message":
                                continue
                            try:
                                handle(json.loads(message["data"]))
                            except (ValueError, KeyError, TypeError, AttributeError):
                                logger.warning("Ignored a malformed %s message: %r", what, message["data"][:200])
                finally:
                    await client.aclose()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis restarting: keep listening once it is back
                logger.warning("The %s listener lost Redis (retrying in 1s): %s", what, exc)
                await asyncio.sleep(1)

    async def _listen_for_cancels(self) -> None:
        def handle(request: dict) -> None:
            self.cancel_here(str(request["run_id"]), str(request.get("action") or "interrupt"))

        await self.listen(CANCEL_CHANNEL, handle, "run cancel")

    async def wait_done(self, run_id: str, timeout: float | None = None) -> bool:
        """On the runs loop: wait until the run's task has finished its bookkeeping."""
        entry = self.active.get(run_id)
        if entry is None:
            return True
        try:
            await asyncio.wait_for(entry.done.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def mark_started(self, run_id: str) -> None:
        entry = self.active.get(run_id)
        if entry is not None:
            entry.started = True

    def cancel_action(self, run_id: str) -> str | None:
        entry = self.active.get(run_id)
        return entry.cancel_action if entry else None


_runtime: RunsRuntime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> RunsRuntime:
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                _runtime = RunsRuntime(settings.CHECKPOINTER_URL)
    return _runtime


def stop_runtime() -> None:
    """Stop the process's runtime if it was started (see ``RunsRuntime.stop``)."""
    global _runtime
    with _runtime_lock:
        runtime, _runtime = _runtime, None
    if runtime is not None:
        runtime.stop()
