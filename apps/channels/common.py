"""Pieces the part-2 adapters (Feishu, DingTalk, WeCom, Discord) share.

- ``PlatformError``: a platform API answered with an error; ``str()`` says which call and why.
- ``Backoff``: the delays between reconnect attempts after an outage (capped, jittered).
- The webhook bridge: an HTTP callback lands in the web process, the adapter runs in the
  channel worker (``run_channels``). The view verifies and decrypts, then hands the plain
  payload over the Django Channels layer (Redis across processes); on the embedded stack's
  in-memory layer a worker in another process reads it from a spool directory instead. The
  worker needs no listening port of its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import mimetypes
import os
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from harness.net import GuardPolicy
from harness.net.guard import GuardError, ResponseTooLarge, guarded_client, read_capped

log = logging.getLogger(__name__)

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})


class PlatformError(Exception):
    """A platform API call failed (non-success code, HTTP error, malformed answer)."""


class Backoff:
    """1 s, 2 s, 4 s ... up to ``cap``, with ±20 % jitter so many workers do not reconnect in step."""

    def __init__(self, base: float = 1.0, cap: float = 60.0) -> None:
        self.base, self.cap, self.attempt = base, cap, 0

    def next_delay(self) -> float:
        delay = min(self.cap, self.base * (2 ** self.attempt))
        self.attempt += 1
        return delay * random.uniform(0.8, 1.2)

    def reset(self) -> None:
        self.attempt = 0


async def run_with_backoff(name: str, connect: Callable[[], Awaitable[None]], stopping: asyncio.Event,
                           backoff: Backoff | None = None, on_error: Callable[[str], Awaitable[None]] | None = None) -> None:
    """Call ``connect`` (which returns when the connection ends) again after each outage;
    ``on_error`` (the adapter's ``hooks.error``) hears each failure, for the admin status."""
    backoff = backoff or Backoff()
    while not stopping.is_set():
        try:
            await connect()
            backoff.reset()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an outage of any kind: log it and try again later
            log.warning("%s connection failed: %s", name, exc, exc_info=log.isEnabledFor(logging.DEBUG))
            if on_error is not None:
                await on_error(f"connection failed, retrying: {type(exc).__name__}: {exc}")
        if stopping.is_set():
            return
        try:
            await asyncio.wait_for(stopping.wait(), timeout=backoff.next_delay())
        except TimeoutError:
            pass


def direct_chat_hint(display_name: str, code: str) -> tuple[str, str]:
    """The connect instruction for platforms with group chats: codes count only in a direct chat."""
    return "", f"Send this message to the {display_name} bot in a direct chat: /connect {code}"


def guess_type(name: str, content_type: str | None = None) -> str:
    return content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"


def is_image(name: str, content_type: str | None = None) -> bool:
    return guess_type(name, content_type) in IMAGE_TYPES


def guard_policy(settings: Any) -> GuardPolicy:
    """Media and webhook URLs from a platform pass the SSRF guard; ``allowed_networks`` opens
    an intranet (a private deployment, or loopback in tests)."""
    return GuardPolicy.from_networks(settings.get("allowed_networks") or ())


# --- the webhook bridge ---------------------------------------------------------------------

def webhook_channel(provider: str) -> str:
    return f"channels-webhook.{provider}"


# Providers whose consumer runs in this process (an in-memory layer reaches only those).
_local_consumers: set[str] = set()
SPOOL_POLL_SECONDS = 0.5


def spool_dir(provider: str) -> Path:
    """Where callbacks wait for a worker in another process when the layer is in memory."""
    from harness.config.paths import deer_flow_home

    return deer_flow_home() / "channels" / "inbox" / provider


# A webhook delivery is remembered for a day: platforms redeliver within minutes or hours.
DELIVERY_MEMORY_SECONDS = 24 * 3600
_last_prune = [0.0]


def claim_delivery(key: tuple) -> bool:
    """True the first time any process of this installation is handed ``key`` (provider, chat,
    message id), False for a redelivery. Webhooks can land on any web server (``make run`` has
    two) or come again after a restart, so an in-memory set is not enough: the claim is a file
    created exclusively under ``DEER_FLOW_HOME/channels/deliveries``, which the servers share.
    Blocking: call it off the loop."""
    directory = _claims_dir()
    directory.mkdir(parents=True, exist_ok=True)
    now = time.time()
    if now - _last_prune[0] > 3600:  # at most hourly: a scan of the day's claims
        _last_prune[0] = now
        for old in directory.iterdir():
            try:
                if now - old.stat().st_mtime > DELIVERY_MEMORY_SECONDS:
                    old.unlink()
            except OSError:
                pass  # another server pruned it first
    try:
        os.close(os.open(directory / _claim_name(key), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def release_delivery(key: tuple) -> None:
    """Forget a claim whose work could not be handed over, so a redelivery may try again."""
    (_claims_dir() / _claim_name(key)).unlink(missing_ok=True)


def _claims_dir() -> Path:
    from harness.config.paths import deer_flow_home

    return deer_flow_home() / "channels" / "deliveries"


def _claim_name(key: tuple) -> str:
    import hashlib

    return hashlib.sha256(json.dumps([str(part) for part in key]).encode()).hexdigest()[:40]


def _spool_write(provider: str, payload: dict[str, Any]) -> None:
    directory = spool_dir(provider)
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    tmp = directory / f".{name}.tmp"
    tmp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(tmp, directory / f"{name}.json")  # the worker never sees a half-written file


def _spool_take(provider: str) -> list[dict[str, Any]]:
    directory = spool_dir(provider)
    if not directory.is_dir():
        return []
    taken = []
    for path in sorted(directory.glob("*.json")):
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("%s: unreadable spooled callback %s dropped: %s", provider, path.name, exc)
            payload = None
        path.unlink(missing_ok=True)
        if payload is not None:
            taken.append(payload)
    return taken


async def publish_webhook(provider: str, payload: dict[str, Any]) -> None:
    from channels.layers import InMemoryChannelLayer, get_channel_layer

    layer = get_channel_layer()
    if isinstance(layer, InMemoryChannelLayer) and provider not in _local_consumers:
        # Embedded mode: the worker (manage.py run_channels) is another process on this machine
        # and an in-memory layer does not cross processes, so the payload waits in a spool
        # directory under DEER_FLOW_HOME. With Redis the layer carries it to any worker.
        await asyncio.to_thread(_spool_write, provider, payload)
        return
    await layer.send(webhook_channel(provider), {"type": "channel.webhook", "payload": payload})


async def consume_webhooks(provider: str, handle: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    """Feed each bridged payload to ``handle`` until cancelled; one bad payload is logged, not fatal."""
    from channels.layers import InMemoryChannelLayer, get_channel_layer

    layer = get_channel_layer()
    name = webhook_channel(provider)

    async def safely(payload: dict[str, Any]) -> None:
        try:
            await handle(payload)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s webhook payload could not be handled", provider)

    async def from_spool() -> None:
        while True:
            for payload in await asyncio.to_thread(_spool_take, provider):
                await safely(payload)
            await asyncio.sleep(SPOOL_POLL_SECONDS)

    _local_consumers.add(provider)
    spool = asyncio.create_task(from_spool()) if isinstance(layer, InMemoryChannelLayer) else None
    try:
        while True:
            message = await layer.receive(name)
            await safely(message["payload"])
    finally:
        _local_consumers.discard(provider)
        if spool is not None:
            spool.cancel()


async def download(policy: GuardPolicy, url: str, *, limit: int, what: str) -> bytes:
    """A platform file, through the SSRF guard, refused once it passes ``limit`` bytes;
    every failure is a ``PlatformError`` naming ``what`` ("discord attachment", ...)."""
    try:
        async with guarded_client(policy) as client, client.stream("GET", url) as response:
            if response.status_code != 200:
                raise PlatformError(f"{what} fetch failed: HTTP {response.status_code}")
            return await read_capped(response, limit)
    except ResponseTooLarge:
        raise PlatformError(f"{what} is over {limit:,} bytes") from None
    except GuardError as exc:
        raise PlatformError(f"{what} fetch refused: {exc}") from None
