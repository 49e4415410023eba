"""Reads for the channels API and pages: which providers exist, whether they are usable here,
and what their worker last reported. Nothing here runs on the run path."""

from __future__ import annotations

from typing import Any

import segno

from apps.channels import registry
from apps.channels.config import channels_settings
from apps.channels.models import ChannelStatus
from apps.errors import NotFound


def _why_off(name: str, section: dict, cls, enabled: bool) -> str:
    if not enabled:
        return "IM channels are off (channels.enabled in config.yaml)"
    if not section:
        return f"not configured (no channels.{name} section in config.yaml)"
    if not section.get("enabled"):
        return f"turned off (channels.{name}.enabled)"
    if section.get("unavailable_reason"):
        return str(section["unavailable_reason"])
    if cls is None:
        return f"the {name} adapter could not be loaded on this server"
    missing = cls.missing_settings(section)
    return f"missing {', '.join(missing)} in channels.{name}" if missing else ""


_ACRONYMS = {"id": "ID", "aes": "AES", "url": "URL", "api": "API"}
_SECRET_WORDS = ("token", "secret", "key", "password")


def credential_field(name: str) -> dict[str, Any]:
    """One setting a provider needs, the way DeerFlow's frontend reads it: ``{name, label, type,
    required}``; ``type`` is ``password`` for secrets (tokens, secrets, keys), else ``text``.
    Every listed field is required: a provider missing one is not configured."""
    words = name.split("_")
    label = " ".join(_ACRONYMS.get(w, w) for w in words)
    label = label[:1].upper() + label[1:]
    secret = any(w in _SECRET_WORDS for w in words)
    return {"name": name, "label": label, "type": "password" if secret else "text", "required": True}


def login_qr(content: str) -> dict[str, str]:
    """The QR code a platform wants scanned (WeChat's login) as an SVG data URI, and the
    link it encodes when that is a web address (a phone opens it too)."""
    image = segno.make(content, error="m").svg_data_uri(scale=5, border=2, dark="#000", light="#fff")
    link = content if content.startswith(("https://", "http://")) else ""
    return {"image": image, "link": link}


def providers_list(*, staff: bool) -> dict[str, Any]:
    settings = channels_settings()
    adapters = registry.load_adapters()
    statuses = {row.provider: row for row in ChannelStatus.objects.all()}
    names = sorted(set(registry.ADAPTER_MODULES) | set(adapters) | set(settings.providers))
    providers = []
    for name in names:
        cls = adapters.get(name)
        section = dict(settings.provider(name))
        why = _why_off(name, section, cls, settings.enabled)
        status = statuses.get(name)
        item = {
            "provider": name,
            "display_name": cls.display_name if cls else name.capitalize(),
            "enabled": settings.provider_enabled(name),
            "configured": bool(section) and cls is not None and not section.get("unavailable_reason") and not cls.missing_settings(section),
            "connectable": not why,
            "auth_mode": "code",
            "connection_status": status.state if status else "stopped",
            "credential_fields": [credential_field(field) for field in cls.credential_fields] if cls else [],
            "detail": why or (status.detail if status else ""),
            "bot_name": (status.bot_name if status else "") or str(section.get("bot_username") or "").lstrip("@"),
            "last_event_at": status.last_event_at.isoformat() if status and status.last_event_at else None,
        }
        if staff and status is not None:
            # Admins only: an error text may name hosts and settings.
            item["last_error"] = status.last_error
            item["last_error_at"] = status.last_error_at.isoformat() if status.last_error_at else None
            if status.login_qr:
                # Whoever scans it logs the bot in: shown to administrators only.
                item["login_qr"] = login_qr(status.login_qr)
        providers.append(item)
    return {"enabled": settings.enabled, "providers": providers}


def connectable_provider(name: str):
    """(adapter class, settings, bot name) of a provider a user may connect to now."""
    from apps.errors import Conflict

    settings = channels_settings()
    adapters = registry.load_adapters()
    if name not in adapters and name not in registry.ADAPTER_MODULES and name not in settings.providers:
        raise NotFound(f"no channel named '{name}'")
    cls = adapters.get(name)
    section = dict(settings.provider(name))
    why = _why_off(name, section, cls, settings.enabled)
    if why:
        raise Conflict(f"{name} cannot be connected on this server: {why}")
    status = ChannelStatus.objects.filter(provider=name).values_list("bot_name", flat=True).first()
    return cls, settings, section, status or ""
