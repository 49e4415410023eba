"""Channels that are driven by webhooks, hosted in the web process.

GitHub deliveries and Slack's Events API arrive as HTTP requests at the web server, not at
the ``run_channels`` worker, so the web process keeps its own adapters and a manager for them.
They live on the runs runtime loop (``apps.runs.runtime``), the one long-lived loop of the
process: a request thread hands a message over and returns its 2xx at once, while the run,
its answer and any buffered follow-ups go on there after the response has been sent.

Nothing is built until the first delivery, so a server that takes no webhooks pays nothing;
the host is rebuilt when ``channels:`` in config.yaml changes (a manager that is replaced
finishes the turns it holds).

GitHub's follow-ups differ from a chat's: nobody is waiting in a chat window, so a comment
that arrives while the thread's run is busy is buffered silently, and when the buffer is full
the oldest comment is dropped (with a warning) rather than the newest refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from apps.channels.base import ChannelAdapter
from apps.channels.common import claim_delivery
from apps.channels.config import ChannelsSettings, channels_settings
from apps.channels.manager import CONNECT_COMMANDS, ChannelManager, _Turn, parse_command

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_GITHUB_BUFFER = 20


class WebhookManager(ChannelManager):
    """The channel manager with GitHub's busy-thread buffer (silent, bounded, oldest dropped)."""

    async def _enqueue(self, adapter: ChannelAdapter, turn: _Turn) -> None:
        if turn.message.chat.provider != "github":
            await super()._enqueue(adapter, turn)
            return
        key = self._key(turn.connection, turn.message.chat)
        state = self._conversations.get(key)
        if state is None or state.worker is None or state.worker.done():
            await super()._enqueue(adapter, turn)
            return
        limit = _buffer_limit(self.settings.provider("github"))
        while len(state.queue) >= limit:
            dropped: _Turn = state.queue.popleft()
            log.warning("github: buffer for %s#%s is full (%d): dropped delivery %s from @%s",
                        dropped.message.chat.chat, dropped.message.chat.topic, limit,
                        dropped.message.message_id, dropped.message.sender_name)
        state.queue.append(turn)
        log.info("github: %s#%s is busy; delivery %s buffered (%d waiting)", turn.message.chat.chat,
                 turn.message.chat.topic, turn.message.message_id, len(state.queue))

    async def _handle(self, message) -> None:
        # GitHub has no private chat with the bot: a connect code can only arrive in a comment.
        # The manager refuses codes outside direct chats (others could read them and race the
        # owner to the bot); on GitHub the comment's own delivery spends the code, and a copy
        # by someone else arrives only after it, so the code is taken here, by the author of
        # the first delivery that carries it. docs/channels.md says what is left of the risk.
        if message.chat.provider == "github":
            command = parse_command(message.text)
            adapter = self.adapters.get("github")
            if command and command[0] in CONNECT_COMMANDS and command[1] and adapter is not None:
                if not await self._already_handled(message):
                    await self._connect(adapter, message, command[1])
                return
        await super()._handle(message)

    async def _already_handled(self, message) -> bool:
        """Deliveries reach whichever web server the platform's request landed on, or come
        again after a restart: past this process's memory, the installation's claim decides."""
        if self._duplicate(message):
            return True
        if not message.message_id:
            return False
        key = (message.chat.provider, message.chat.workspace, message.chat.chat, message.message_id)
        return not await asyncio.to_thread(claim_delivery, key)

    def sink_for(self, provider: str):
        return self.handle_tracked

    def track_current(self) -> None:
        """Make the running task one that ``idle()``/``close()`` know about: a delivery being
        looked up counts as work in progress, not only a turn that runs."""
        task = asyncio.current_task()
        if task not in self._tasks:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def handle_tracked(self, message) -> None:
        self.track_current()
        await self.handle(message)


def _buffer_limit(settings: Mapping[str, Any]) -> int:
    value = settings.get("max_buffered")
    return value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 200 else DEFAULT_GITHUB_BUFFER


class _Host:
    def __init__(self, settings: ChannelsSettings) -> None:
        self.settings = settings
        self.manager = WebhookManager(settings)
        self.started: dict[str, ChannelAdapter] = {}
        self.starting: dict[str, asyncio.Future] = {}  # provider → its start(), on the runs loop


_lock = threading.Lock()
_host: _Host | None = None
_retired: list[_Host] = []


def provider_settings(provider: str) -> Mapping[str, Any]:
    """``channels.<provider>`` from config.yaml (an empty mapping when absent)."""
    return channels_settings().provider(provider)


def unavailable(provider: str) -> str | None:
    """Why a provider's messages cannot be handled now, or None when they can (the same
    rules, and words, as the worker's plan)."""
    from apps.channels.worker import plan

    return plan(channels_settings()).disabled.get(provider)


def call(fn: Callable[..., Awaitable[T]], *args: Any, timeout: float | None = 30) -> T:
    """Run ``fn`` on the runs loop and wait (tests, management code; never a request)."""
    from apps.runs.runtime import get_runtime

    return get_runtime().call(fn, *args, timeout=timeout)


def _current() -> _Host:
    global _host
    settings = channels_settings()
    with _lock:
        if _host is None or _host.settings != settings:
            if _host is not None:
                _retired.append(_host)
            _host = _Host(settings)
        return _host


def _adapter(host: _Host, provider: str) -> ChannelAdapter:
    """The host's adapter for ``provider``, built (not started) on first use."""
    from apps.channels.registry import get_adapter
    from apps.channels.status import DatabaseHooks

    with _lock:
        adapter = host.started.get(provider)
        if adapter is None:
            cls = get_adapter(provider)
            adapter = cls(host.settings.provider(provider), host.manager.sink_for(provider), DatabaseHooks(provider))
            host.started[provider] = adapter
            host.manager.adapters[provider] = adapter
        return adapter


async def _started(host: _Host, provider: str, adapter: ChannelAdapter) -> None:
    """Start the adapter once (GitHub: nothing; Slack: auth.test, which names the bot user).

    This runs on the runs loop, never in the request: start() records the channel's status
    through the ORM, and a request thread waiting on that would hold the very thread Django's
    sync-to-async calls need (a deadlock under Daphne). The runs loop is single-threaded, so
    the dict needs no lock; a failed start is retried by the next delivery.
    """
    pending = host.starting.get(provider)
    if pending is None:
        pending = host.starting[provider] = asyncio.ensure_future(adapter.start())
    try:
        await asyncio.shield(pending)
    except Exception:
        if host.starting.get(provider) is pending:
            del host.starting[provider]
        raise


async def _deliver(host: _Host, adapter: ChannelAdapter, message) -> None:
    host.manager.track_current()  # first, before anything awaits: idle() must see it
    try:
        await _started(host, adapter.provider, adapter)
    except Exception:
        log.exception("%s: the channel could not start; delivery %s dropped", adapter.provider, message.message_id)
        return
    await adapter.hooks.event()  # the admin status shows when the platform last spoke
    await host.manager.handle(message)


def _submit(coro) -> concurrent.futures.Future:
    """Schedule on the runs loop in a fresh context: the request's context carries asgiref's
    per-request executor, which is gone once the response is sent, and the turn's ORM calls
    must not be routed to it."""
    from apps.runs.runtime import get_runtime

    loop = get_runtime().loop
    return contextvars.Context().run(asyncio.run_coroutine_threadsafe, coro, loop)


def dispatch(provider: str, message) -> None:
    """Hand an inbound message to the manager on the runs loop; returns at once."""
    host = _current()
    _submit(_deliver(host, _adapter(host, provider), message))


async def _http(host: _Host, adapter, body: bytes, headers: Mapping[str, str]):
    await _started(host, adapter.provider, adapter)
    return await adapter.handle_http(body, headers)


def events_handler(provider: str) -> Callable[[bytes, Mapping[str, str]], Any] | None:
    """For a platform's HTTP events: a function returning a concurrent future of the
    adapter's (status, headers, body); None when that route is off (the provider is not
    enabled, or not set to ``mode: events`` with its secret)."""
    settings = provider_settings(provider)
    if str(settings.get("mode") or "").lower() != "events" or unavailable(provider):
        return None
    host = _current()
    adapter = _adapter(host, provider)
    return lambda body, headers: _submit(_http(host, adapter, body, headers))


def host_manager() -> WebhookManager:
    return _current().manager


async def close_all() -> None:
    """Stop every hosted manager and adapter (tests; the process going down)."""
    global _host
    with _lock:
        hosts = [h for h in [*_retired, _host] if h is not None]
        _retired.clear()
        _host = None
    for host in hosts:
        await host.manager.close()
        for adapter in host.started.values():
            try:
                await adapter.stop()
            except Exception:
                log.exception("channel %s did not stop cleanly", adapter.provider)
