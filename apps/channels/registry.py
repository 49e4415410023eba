"""Provider name → adapter class. Adapters register on import; ``load_adapters`` imports them."""

from __future__ import annotations

import importlib
import logging

from apps.channels.base import ChannelAdapter

log = logging.getLogger(__name__)

_ADAPTERS: dict[str, type[ChannelAdapter]] = {}

# Module per provider. A module whose SDK is missing is skipped with a log line, not a crash.
ADAPTER_MODULES: dict[str, str] = {
    "telegram": "apps.channels.adapters.telegram",
    "feishu": "apps.channels.adapters.feishu",
    "dingtalk": "apps.channels.adapters.dingtalk",
    "wecom": "apps.channels.adapters.wecom",
    "discord": "apps.channels.adapters.discord_bot",
    "github": "apps.channels.adapters.github",
    "slack": "apps.channels.adapters.slack",
    "wechat": "apps.channels.adapters.wechat",
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
