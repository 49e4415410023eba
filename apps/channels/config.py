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
        allowed_users: []      # platform user ids that may talk to the bot (empty: any connected one)
      session:                 # DeerFlow's run defaults; a provider's own ``session:`` and its
        assistant_id: ...      # ``users: {<platform id>: {...}}`` override them, key by key
        context: {...}
        group_chats: per_user  # or ``shared``: one thread per group chat for all its members

Read through ``get_app_config()`` (cached by content signature), so nothing here costs a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.config.loader import get_app_config

SHARED_KEYS = frozenset({"enabled", "queue_size", "connect_code_ttl", "public_url", "session"})
DEFAULT_QUEUE_SIZE = 5
DEFAULT_CODE_TTL = 600


@dataclass(frozen=True)
class ChannelsSettings:
    enabled: bool
    queue_size: int
    connect_code_ttl: int
    public_url: str
    providers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    session: Mapping[str, Any] = field(default_factory=dict)  # ``channels.session``

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
        session=section.session.model_dump(exclude_none=True),
    )


def allowed_chats(settings: Mapping[str, Any]) -> frozenset[str]:
    chats = settings.get("allowed_chats") or []
    return frozenset(str(c) for c in chats) if isinstance(chats, list) else frozenset()


def allowed_users(settings: Mapping[str, Any]) -> frozenset[str]:
    """``allowed_users``: a list of platform user ids, or DeerFlow's single-id string form."""
    users = settings.get("allowed_users") or []
    if isinstance(users, (str, int)) and not isinstance(users, bool):
        users = [users]
    return frozenset(str(u).strip() for u in users if str(u).strip()) if isinstance(users, list) else frozenset()


GROUP_MODES = ("per_user", "shared")


@dataclass(frozen=True)
class Session:
    """What a channel turn runs with, from ``channels.session``, ``channels.<provider>.session``
    and that section's ``users.<sender id>``, the later layer winning key by key (DeerFlow's
    order); a provider's plain ``assistant_id`` sits between the global and the provider layer."""

    assistant_id: str | None
    context: dict[str, Any]
    config: dict[str, Any]
    group_chats: str  # "per_user" | "shared"


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def session_for(settings: ChannelsSettings, provider: str, sender_id: str = "") -> Session:
    section = settings.provider(provider)
    top, channel = _mapping(settings.session), _mapping(section.get("session"))
    user = _mapping(_mapping(channel.get("users")).get(str(sender_id))) if sender_id else {}
    assistant_id = (user.get("assistant_id") or channel.get("assistant_id") or section.get("assistant_id")
                    or top.get("assistant_id") or None)
    context: dict[str, Any] = {}
    config: dict[str, Any] = {}
    for layer in (top, channel, user):
        context.update(_mapping(layer.get("context")))
        config.update(_mapping(layer.get("config")))
    mode = channel.get("group_chats") or top.get("group_chats") or "per_user"
    return Session(assistant_id=str(assistant_id) if assistant_id else None, context=context, config=config,
                   group_chats=mode if mode in GROUP_MODES else "per_user")
