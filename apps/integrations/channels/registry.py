"""Provider name → adapter class. Adapters register on import; ``load_adapters`` imports them."""

from __future__ import annotations

import importlib
import logging

from apps.integrations.channels.base import ChannelAdapter

log = logging.getLogger(__name__)

_ADAPTERS: dict[str, type[ChannelAdapter]] = {}

# Module per provider. A module whose SDK is missing is skipped with a log line, not a crash.
ADAPTER_MODULES: dict[str, str] = {
    "telegram": "apps.integrations.channels.telegram",
    "feishu": "apps.integrations.channels.feishu",
    "dingtalk": "apps.integrations.channels.dingtalk",
    "wecom": "apps.integrations.channels.wecom",
    "discord": "apps.integrations.channels.discord_bot",
    "github": "apps.integrations.channels.github",
    "slack": "apps.integrations.channels.slack",
}


def register(cls: type[ChannelAdapter]) -> type[ChannelAdapter]:
    _ADAPTERS[cls.provider] = cls
    return cls


def load_adapters() -> dict[str, type[ChannelAdapter]]:
    for provider, module in ADAPTER_MODULES.items():
        if provider in _ADAPTERS:
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:
            log.warning("channel %s is unavailable: %s", provider, exc)
    return dict(_ADAPTERS)


def get_adapter(provider: str) -> type[ChannelAdapter] | None:
    return load_adapters().get(provider)
