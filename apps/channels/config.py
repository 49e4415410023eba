"""``config.yaml`` ``channels:``: the global switch, shared options and one section per provider.

    channels:
      enabled: true            # the worker starts nothing while this is false
      queue_size: 5            # follow-ups held per conversation while a run is active
      connect_code_ttl: 600    # seconds a connect code stays valid
      public_url: https://deerflow.example.com   # for the "connect your account" link
      telegram:
        enabled: true
        bot_token: $TELEGRAM_BOT_TOKEN
        allowed_chats: []      # group chats the bot answers in (empty: any)

Read through ``get_app_config()`` (cached by content signature), so nothing here costs a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.config.loader import get_app_config

SHARED_KEYS = frozenset({"enabled", "queue_size", "connect_code_ttl", "public_url"})
DEFAULT_QUEUE_SIZE = 5
DEFAULT_CODE_TTL = 600


@dataclass(frozen=True)
class ChannelsSettings:
    enabled: bool
    queue_size: int
    connect_code_ttl: int
    public_url: str
    providers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def provider(self, name: str) -> Mapping[str, Any]:
        return self.providers.get(name) or {}

    def provider_enabled(self, name: str) -> bool:
        return self.enabled and bool(self.provider(name).get("enabled"))


def _int(value: Any, default: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return max(low, min(high, value))


def channels_settings() -> ChannelsSettings:
    section = get_app_config().channels
    extra = dict(section.model_extra or {})
    providers = {name: value for name, value in extra.items() if name not in SHARED_KEYS and isinstance(value, Mapping)}
    return ChannelsSettings(
        enabled=bool(section.enabled),
        queue_size=_int(extra.get("queue_size"), DEFAULT_QUEUE_SIZE, 0, 50),
        connect_code_ttl=_int(extra.get("connect_code_ttl"), DEFAULT_CODE_TTL, 60, 86400),
        public_url=str(extra.get("public_url") or "").rstrip("/"),
        providers=providers,
    )


def allowed_chats(settings: Mapping[str, Any]) -> frozenset[str]:
    chats = settings.get("allowed_chats") or []
    return frozenset(str(c) for c in chats) if isinstance(chats, list) else frozenset()
