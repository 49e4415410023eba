"""The worker's reports about each channel, kept in ``ChannelStatus`` rows so the web process
(admin, providers API) shows them without talking to the worker."""

from __future__ import annotations

import logging
import time
from typing import Any

from channels.db import database_sync_to_async
from django.utils import timezone

from apps.channels.base import AdapterHooks
from apps.channels.models import ChannelStatus
from apps.runs.runtime import process_id

logger = logging.getLogger(__name__)

# A busy bot gets many events a second; "last event" is for people, to the nearest half minute.
EVENT_WRITE_EVERY = 30.0


def status_set(provider: str, *, state: str, detail: str = "", bot_name: str | None = None, login_qr: str = "") -> None:
    # Any state but "login" retires a QR code: it was scanned, or the worker moved on.
    values: dict[str, Any] = {"state": state, "detail": detail[:500], "process": process_id(), "login_qr": login_qr}
    if bot_name is not None:
        values["bot_name"] = bot_name[:128]
    ChannelStatus.objects.update_or_create(provider=provider, defaults=values)


def _error(provider: str, message: str) -> None:
    ChannelStatus.objects.update_or_create(provider=provider, defaults={
        "last_error": message[:4000], "last_error_at": timezone.now(), "process": process_id()})


def _event(provider: str) -> None:
    ChannelStatus.objects.update_or_create(provider=provider, defaults={"last_event_at": timezone.now()})


def _cursor(provider: str) -> dict:
    row = ChannelStatus.objects.filter(provider=provider).values_list("cursor", flat=True).first()
    return dict(row or {})


def _save_cursor(provider: str, cursor: dict) -> None:
    ChannelStatus.objects.update_or_create(provider=provider, defaults={"cursor": cursor})


def status_map() -> dict[str, ChannelStatus]:
    return {row.provider: row for row in ChannelStatus.objects.all()}


class DatabaseHooks(AdapterHooks):
    def __init__(self, provider: str) -> None:
        self.provider = provider
        self._last_event = 0.0

    async def connected(self, *, bot_name: str = "") -> None:
        logger.info("Channel %s connected%s", self.provider, f" as {bot_name}" if bot_name else "")
        await database_sync_to_async(status_set)(self.provider, state="connected", bot_name=bot_name or None)

    async def event(self) -> None:
        now = time.monotonic()
        if now - self._last_event < EVENT_WRITE_EVERY:
            return
        self._last_event = now
        await database_sync_to_async(_event)(self.provider)

    async def login_required(self, qr_content: str, detail: str) -> None:
        logger.warning("Channel %s: waiting for an operator to scan the login QR code (Settings → Connections)", self.provider)
        await database_sync_to_async(status_set)(self.provider, state="login", detail=detail, login_qr=qr_content)

    async def error(self, message: str) -> None:
        logger.warning("Channel %s: %s", self.provider, message)
        await database_sync_to_async(_error)(self.provider, message)

    async def load_cursor(self) -> dict:
        return await database_sync_to_async(_cursor)(self.provider)

    async def save_cursor(self, cursor: dict) -> None:
        await database_sync_to_async(_save_cursor)(self.provider, cursor)
