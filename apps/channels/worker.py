"""The channels worker: builds the enabled adapters from ``config.yaml``, hands them the
manager as their sink and keeps them running. ``manage.py run_channels`` runs it; it shares
nothing with the web server but the database (and Redis/Celery in the distributed setup), so
it can be restarted on its own.

Every provider that stays off says why, in the log and in its ``ChannelStatus`` row.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from channels.db import database_sync_to_async

from apps.channels import registry
from apps.channels.base import ChannelAdapter
from apps.channels.config import ChannelsSettings, channels_settings
from apps.channels.manager import ChannelManager
from apps.channels.status import DatabaseHooks, status_set

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    adapters: dict[str, type[ChannelAdapter]]
    disabled: dict[str, str]  # provider -> why it stays off


def plan(settings: ChannelsSettings) -> Plan:
    """Which adapters start, and why each other configured/known provider does not."""
    known = registry.load_adapters()
    start: dict[str, type[ChannelAdapter]] = {}
    disabled: dict[str, str] = {}
    names = sorted(set(known) | set(settings.providers) | set(registry.ADAPTER_MODULES))
    for name in names:
        section = settings.provider(name)
        if not settings.enabled:
            disabled[name] = "channels.enabled is false in config.yaml"
        elif not section:
            disabled[name] = f"no channels.{name} section in config.yaml"
        elif not section.get("enabled"):
            disabled[name] = f"channels.{name}.enabled is not true"
        elif section.get("unavailable_reason"):
            disabled[name] = f"channels.{name}: {section['unavailable_reason']}"
        elif name not in known:
            disabled[name] = (f"the {name} adapter could not be loaded (its SDK is missing?)" if name in registry.ADAPTER_MODULES
                              else f"no adapter named {name!r}; known: {', '.join(sorted(registry.ADAPTER_MODULES)) or 'none'}")
        else:
            missing = known[name].missing_settings(section)
            if missing:
                disabled[name] = f"channels.{name} is missing {', '.join(missing)}"
            else:
                start[name] = known[name]
    return Plan(adapters=start, disabled=disabled)


def any_channel_enabled() -> bool:
    settings = channels_settings()
    return settings.enabled and any(section.get("enabled") for section in settings.providers.values())


class ChannelsWorker:
    def __init__(self, settings: ChannelsSettings | None = None) -> None:
        self.settings = settings or channels_settings()
        self.manager = ChannelManager(self.settings)
        self.started: list[ChannelAdapter] = []

    async def start(self) -> Plan:
        planned = plan(self.settings)
        for name, why in planned.disabled.items():
            if name in self.settings.providers or name in registry.ADAPTER_MODULES:
                logger.info("Channel %s is off: %s", name, why)
                await database_sync_to_async(status_set)(name, state="disabled", detail=why)
        for name, cls in planned.adapters.items():
            adapter = cls(self.settings.provider(name), self.manager.sink_for(name), DatabaseHooks(name))
            self.manager.adapters[name] = adapter
            await database_sync_to_async(status_set)(name, state="starting")
            try:
                await adapter.start()
            except Exception as exc:  # a bad token, say: this channel stays off, the others run
                logger.exception("Channel %s failed to start", name)
                await adapter.hooks.error(f"could not start: {type(exc).__name__}: {exc}")
                await database_sync_to_async(status_set)(name, state="disabled", detail=f"start failed: {exc}")
                self.manager.adapters.pop(name, None)
                continue
            self.started.append(adapter)
        return planned

    async def stop(self) -> None:
        await self.manager.close()
        for adapter in self.started:
            try:
                await adapter.stop()
            except Exception:
                logger.exception("Channel %s did not stop cleanly", adapter.provider)
            await database_sync_to_async(status_set)(adapter.provider, state="stopped")
        self.started.clear()

    async def run_forever(self, stop: asyncio.Event) -> None:
        from apps.channels.outbox import deliver_forever

        await self.start()
        if not self.started:
            logger.warning("No IM channel is running (see the lines above for why); the worker waits idle")
        # Scheduled results for the running channels; nothing to poll for when none runs.
        deliveries = asyncio.create_task(deliver_forever(self.manager.adapters, stop)) if self.started else None
        try:
            await stop.wait()
        finally:
            if deliveries is not None:
                deliveries.cancel()
                await asyncio.gather(deliveries, return_exceptions=True)
            await self.stop()
