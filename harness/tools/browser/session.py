"""Live browser sessions, one per thread, on a loop of their own.

Playwright's async objects belong to the event loop that made them, while runs execute on
whatever loop their executor has (the server's runtime loop, a Celery worker's). So the
browsers live on one dedicated thread with its own loop, and the tools hand it coroutines
(:meth:`BrowserService.run`); the caller's loop only awaits a future and never blocks.

A session is a Chromium process of its own with one context and one page: cookies and storage
never cross threads, a per-session memory cap can be a Chromium flag, and a crash takes down
one thread's browser only. Its network goes through a :class:`~.proxy.GuardProxy` of its own.
At most ``browser.max_sessions`` are open per process; a call waits up to
``queue_timeout_seconds`` for one and then fails with a clear tool error. Sessions close on
``browser_close``, when their run ends (BrowserSessionMiddleware), when a new run of the thread
finds one left over, and after ``idle_timeout_seconds`` without a call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from harness.config.browser import BrowserConfig
from harness.net.guard import GuardPolicy
from harness.net.proxy import GuardProxy

logger = logging.getLogger(__name__)

T = TypeVar("T")
FrameSink = Callable[[dict[str, Any]], None]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,InterestFeedContentSuggestions", "--mute-audio"]


CRASHED = "Error: the browser crashed; the next browser call starts a fresh one (pages, cookies and sign-ins are gone)."


class BrowserError(Exception):
    """A browser call that could not be done; ``str()`` is the tool error's text."""


@dataclass(frozen=True)
class Settings:
    """What a session is made with: ``browser:`` merged with the ``browser_navigate`` entry's
    DeerFlow keys (harness/tools/browser/tools.py)."""

    config: BrowserConfig
    policy: GuardPolicy
    timeout_ms: int
    viewport: tuple[int, int]


@dataclass
class Session:
    key: tuple[str, str]
    run_id: str | None
    browser: Any
    context: Any
    page: Any
    proxy: GuardProxy
    settings: Settings
    run_started: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    crashed: bool = False
    blocked: list[tuple[str, str]] = field(default_factory=list)  # (url, reason) refused by the guard
    page_hosts: set[str] = field(default_factory=set)  # host:port of every request the page made
    downloads: list[Any] = field(default_factory=list)  # started, not yet saved into the workspace
    sink: FrameSink | None = None
    cdp: Any = None
    last_frame_at: float = 0.0
    busy: asyncio.Lock = field(default_factory=asyncio.Lock)

    def take_blocked(self) -> list[tuple[str, str]]:
        out, self.blocked = self.blocked, []
        return out


class BrowserService:
    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._start_lock = threading.Lock()
        self._playwright: Any = None
        self._sessions: dict[tuple[str, str], Session] = {}
        self._free: asyncio.Condition | None = None  # notified when a session closes
        self._opening = 0
        self._reaper: asyncio.Task | None = None
        self._idle_timeout = 300.0

    # -- the loop ------------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._start_lock:
            if self._loop is None:
                ready = threading.Event()

                def main() -> None:
                    loop = asyncio.new_event_loop()
                    asyncio.set_event_loop(loop)
                    self._loop = loop
                    ready.set()
                    loop.run_forever()

                self._thread = threading.Thread(target=main, name="browser-sessions", daemon=True)
                self._thread.start()
                ready.wait()
            assert self._loop is not None
            return self._loop

    async def run(self, coro_fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``coro_fn()`` on the browser loop; awaited from any loop without blocking it."""
        loop = self._ensure_loop()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro_fn(), loop))

    def run_sync(self, coro_fn: Callable[[], Awaitable[T]], timeout: float = 60) -> T:
        loop = self._ensure_loop()
        return asyncio.run_coroutine_threadsafe(coro_fn(), loop).result(timeout)

    # -- sessions (browser loop only) ----------------------------------------------------

    def has_session(self, user_id: str, thread_id: str) -> bool:
        return (user_id, thread_id) in self._sessions

    def open_count(self) -> int:
        return len(self._sessions)

    async def acquire(self, user_id: str, thread_id: str, run_id: str | None, settings: Settings) -> Session:
        key = (user_id, thread_id)
        session = self._sessions.get(key)
        if session is not None and (session.crashed or not session.browser.is_connected()):
            # It died between steps. Saying so (rather than quietly opening a blank browser) keeps
            # the model from reading an empty page as the page it had open; the call after this
            # one starts fresh. Whether Playwright noticed the death before this call or during
            # it, the model hears the same thing.
            await self._close(session)
            raise BrowserError(CRASHED)
        if session is not None and run_id and session.run_id and session.run_id != run_id:
            # Left over from an earlier run that ended without closing it (a cancel, a crash).
            await self._close(session)
            session = None
        if session is None:
            session = await self._open(key, run_id, settings)
        elif time.monotonic() - session.run_started > settings.config.max_seconds_per_run:
            raise BrowserError(f"Error: this run's browser time ({settings.config.max_seconds_per_run:.0f} s, "
                               "browser.max_seconds_per_run) is used up; answer with what you have.")
        session.last_used = time.monotonic()
        return session

    async def _open(self, key: tuple[str, str], run_id: str | None, settings: Settings) -> Session:
        cfg = settings.config
        self._idle_timeout = cfg.idle_timeout_seconds
        if self._free is None:
            self._free = asyncio.Condition()
        async with self._free:
            try:
                await asyncio.wait_for(self._free.wait_for(lambda: len(self._sessions) + self._opening < cfg.max_sessions),
                                       timeout=cfg.queue_timeout_seconds)
            except asyncio.TimeoutError:
                raise BrowserError(f"Error: all {cfg.max_sessions} browser sessions of this server are in use "
                                   f"(browser.max_sessions); none came free within {cfg.queue_timeout_seconds:.0f} s. "
                                   "Try again later or do without the browser.") from None
            self._opening += 1
        try:
            return await self._launch(key, run_id, settings)
        finally:
            self._opening -= 1

    async def _launch(self, key: tuple[str, str], run_id: str | None, settings: Settings) -> Session:
        if self._playwright is None:
            from playwright.async_api import async_playwright

            self._playwright = await async_playwright().start()
        cfg = settings.config
        if not await asyncio.to_thread(os.access, cfg.executable_path, os.X_OK):
            raise BrowserError(f"Error: there is no browser at {cfg.executable_path} on this server. An operator installs Debian's "
                               "chromium (apt-get install chromium) or sets browser.executable_path; tell the user.")
        proxy = GuardProxy(settings.policy)
        await proxy.start()
        args = [*CHROMIUM_ARGS, f"--proxy-server={proxy.url}",
                # Chromium sends loopback hosts around a proxy unless told not to: they must pass the guard too.
                "--proxy-bypass-list=<-loopback>", f"--js-flags=--max-old-space-size={cfg.memory_mb}"]
        try:
            browser = await self._playwright.chromium.launch(executable_path=cfg.executable_path, args=args, headless=True)
        except Exception as exc:
            await proxy.close()
            raise BrowserError(f"Error: the browser could not be started ({cfg.executable_path}): {str(exc).splitlines()[0]}") from None
        width, height = settings.viewport
        context = await browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True,
                                            service_workers="block")
        page = await context.new_page()
        page.set_default_timeout(settings.timeout_ms)
        page.set_default_navigation_timeout(settings.timeout_ms)
        session = Session(key=key, run_id=run_id, browser=browser, context=context, page=page, proxy=proxy, settings=settings)
        proxy.on_block = lambda url, reason: session.blocked.append((url, reason))
        browser.on("disconnected", lambda _b: setattr(session, "crashed", True))
        page.on("crash", lambda _p: setattr(session, "crashed", True))
        page.on("request", lambda request: session.page_hosts.add(host_port(request.url)))
        page.on("websocket", lambda socket: session.page_hosts.add(host_port(socket.url)))
        # Kept for the session: a download can start after the step that caused it returned,
        # and is then saved by the next step.
        page.on("download", lambda download: session.downloads.append(download))
        self._sessions[key] = session
        if cfg.live_view:
            await self._start_screencast(session)
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.ensure_future(self._reap())
        return session

    async def _start_screencast(self, session: Session) -> None:
        try:
            cdp = await session.context.new_cdp_session(session.page)
        except Exception:
            logger.info("browser: no screencast for this session", exc_info=True)
            return
        session.cdp = cdp
        interval = session.settings.config.frame_interval_ms / 1000

        def on_frame(params: dict[str, Any]) -> None:
            asyncio.ensure_future(_ack(cdp, params.get("sessionId")))
            now = time.monotonic()
            if session.sink is None or now - session.last_frame_at < interval:
                return
            session.last_frame_at = now
            session.sink({"data": params.get("data", ""), "url": session.page.url})

        cdp.on("Page.screencastFrame", on_frame)
        with contextlib.suppress(Exception):
            await cdp.send("Page.startScreencast", {"format": "jpeg", "quality": 55, "maxWidth": 960, "maxHeight": 720})

    async def close_thread(self, user_id: str, thread_id: str) -> bool:
        session = self._sessions.get((user_id, thread_id))
        if session is None:
            return False
        await self._close(session)
        return True

    async def _close(self, session: Session) -> None:
        if self._sessions.get(session.key) is session:
            del self._sessions[session.key]
        with contextlib.suppress(Exception):
            await asyncio.wait_for(session.browser.close(), timeout=10)
        await session.proxy.close()
        if self._free is not None:
            async with self._free:
                self._free.notify_all()

    async def close_all(self) -> None:
        for session in list(self._sessions.values()):
            await self._close(session)

    async def _reap(self) -> None:
        while self._sessions:
            await asyncio.sleep(min(max(self._idle_timeout / 4, 0.5), 30))
            now = time.monotonic()
            for session in list(self._sessions.values()):
                if not session.busy.locked() and now - session.last_used > self._idle_timeout:
                    logger.info("browser: closing the idle session of thread %s", session.key[1])
                    await self._close(session)


def host_port(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or (443 if parts.scheme in ('https', 'wss') else 80)}"


async def _ack(cdp: Any, session_id: Any) -> None:
    with contextlib.suppress(Exception):
        await cdp.send("Page.screencastFrameAck", {"sessionId": session_id})


_SERVICE = BrowserService()


def get_browser_service() -> BrowserService:
    return _SERVICE
