"""Channels that are driven by webhooks, hosted in the web process.

GitHub deliveries and Slack's Events API arrive as HTTP requests at the web server, not at
the ``run_channels`` worker, so the web process keeps its own adapter and manager for them.
They live on the runs runtime loop (``apps.runs.runtime``), the one long-lived loop of the
process: a request thread hands a message over and returns its 2xx at once, while the run,
its answer and any buffered follow-ups go on there after the response has been sent.

Nothing is built until the first delivery: a server that takes no webhooks pays nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from harness.config.loader import get_app_config

log = logging.getLogger(__name__)
T = TypeVar("T")

_lock = threading.Lock()
_hosted: dict[str, Any] = {}  # provider → adapter, built on first use


def provider_settings(provider: str) -> Mapping[str, Any]:
    """``channels.<provider>`` from config.yaml (an empty mapping when absent)."""
    raw = (get_app_config().channels.model_extra or {}).get(provider)
    return raw if isinstance(raw, Mapping) else {}


def unavailable(provider: str) -> str | None:
    """Why a provider's messages cannot be handled now, or None when they can."""
    from apps.integrations.channels.registry import get_adapter

    channels = get_app_config().channels
    if not channels.enabled:
        return "channels are turned off (channels.enabled: false in config.yaml)"
    settings = provider_settings(provider)
    if settings.get("enabled") is False:
        return f"channels.{provider}.enabled is false in config.yaml"
    adapter = get_adapter(provider)
    if adapter is None:
        return f"the {provider} channel is not installed"
    missing = adapter.missing_settings(settings)
    if missing:
        return f"channels.{provider} is missing {', '.join(missing)}"
    return None


def call(fn: Callable[..., Awaitable[T]], *args: Any, timeout: float | None = 30) -> T:
    from apps.runs.runtime import get_runtime

    return get_runtime().call(fn, *args, timeout=timeout)
