"""Build chat models from ``config.yaml`` entries."""

from __future__ import annotations

import copy
import logging
from typing import Any

from langchain_core.language_models import BaseChatModel

from harness.config import AppConfig, ModelConfig, class_path, get_app_config
from harness.models.aiohttp_transport import aiohttp_client_for, sends_through_aiohttp
from harness.models.loop_connections import pool_connections_per_loop
from harness.models.openai_chunks import stream_chunks_as_dicts
from harness.models.openai_requests import send_messages_as_built

logger = logging.getLogger(__name__)


class ModelError(ValueError):
    """A model cannot be built; the message says what to change."""


class UnknownModelError(ModelError):
    pass


class ModelUnavailableError(ModelError):
    pass


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def get_model_config(name: str | None = None, *, config: AppConfig | None = None) -> ModelConfig:
    """The entry called *name* (the first one when None), or a :class:`ModelError` that
    lists what is configured."""
    cfg = config or get_app_config()
    if not cfg.models:
        raise UnknownModelError("no chat models are configured: add one under `models:` in config.yaml (see config.example.yaml)")
    entry = cfg.get_model(name)
    if entry is None:
        names = ", ".join(m.name for m in cfg.models)
        raise UnknownModelError(f"unknown model '{name}'; configured models: {names}")
    return entry


def create_chat_model(name: str | None = None, thinking_enabled: bool = False, *, config: AppConfig | None = None, **overrides: Any) -> BaseChatModel:
    """Instantiate the ``use:`` class of model *name* with its constructor keys.

    With ``thinking_enabled`` on a model that ``supports_thinking``, its
    ``when_thinking_enabled`` keys are deep-merged over the constructor keys (so a nested
    ``extra_body`` gains a flag instead of being replaced). Asking for thinking on a model
    without it logs a warning and builds the model without, rather than failing a run.
    """
    entry = get_model_config(name, config=config)
    if entry.unavailable_reason:
        raise ModelUnavailableError(f"model '{entry.name}' is not usable: {entry.unavailable_reason}")
    try:
        cls = class_path.resolve(entry.use)
    except class_path.ClassPathError as exc:
        raise ModelError(f"model '{entry.name}': {exc}") from None
    kwargs = entry.constructor_kwargs()
    if thinking_enabled:
        if entry.supports_thinking:
            kwargs = _deep_merge(kwargs, entry.when_thinking_enabled)
        else:
            logger.warning("thinking requested but model '%s' does not support it; running without", entry.name)
    kwargs.update(overrides)
    # Streamed replies carry no token counts unless asked for; usage accounting needs
    # them. A server that rejects stream_options can set `stream_usage: false`.
    if "stream_usage" in getattr(cls, "model_fields", {}) and "stream_usage" not in kwargs:
        kwargs["stream_usage"] = True
    # Async calls through the SDK's aiohttp transport, where the entry asks for no client of its own
    http_async_client = aiohttp_client_for(cls, kwargs)
    if http_async_client is not None:
        kwargs["http_async_client"] = http_async_client
    try:
        model = cls(**kwargs)
    except Exception as exc:
        raise ModelError(f"model '{entry.name}' ({entry.use}) could not be created: {type(exc).__name__}: {exc}") from exc
    # Middlewares (usage, vision, summarization) read the config name back from here.
    model.metadata = {**(model.metadata or {}), "deerflow_model_name": entry.name}
    stream_chunks_as_dicts(model)  # OpenAI-SDK models: no typed object per streamed chunk
    send_messages_as_built(model)  # ...and no typed walk of a long history per request
    if not sends_through_aiohttp(model):
        pool_connections_per_loop(model)  # ...and kept-alive connections that work from any loop
    return model


def model_info(entry: ModelConfig) -> dict[str, Any]:
    """The public description of one model (no keys, URLs or secrets); the fields of the
    API's ``GET /api/models`` entries plus vision, limits, pricing and availability."""
    extra = entry.model_extra or {}
    provider_id = extra.get("model") or extra.get("model_name") or extra.get("deployment_name")
    return {
        "name": entry.name,
        "model": provider_id if isinstance(provider_id, str) else None,
        "display_name": entry.label,
        "description": entry.description,
        "supports_thinking": entry.supports_thinking,
        "supports_vision": entry.supports_vision,
        # a model takes a reasoning effort when its config sets one, directly or for thinking
        "supports_reasoning_effort": "reasoning_effort" in extra or "reasoning_effort" in entry.when_thinking_enabled,
        "context_window": entry.context_window,
        "max_tokens": entry.max_tokens,
        "pricing": entry.pricing.model_dump() if entry.pricing else None,
        "available": entry.unavailable_reason is None,
        "unavailable_reason": entry.unavailable_reason,
    }


def api_model_entry(entry: ModelConfig, probe: dict[str, Any] | None = None) -> dict[str, Any]:
    """One ``GET /api/models`` entry (and the embedded client's ``list_models``): ``probe`` is
    the model's latest capability probe, which the server keeps; a model that failed the
    tool-calling probe is not offered unless an admin allows it."""
    info = model_info(entry)
    return {
        **{k: info[k] for k in ("name", "model", "display_name", "description", "supports_thinking",
                                "supports_reasoning_effort", "supports_vision", "available", "unavailable_reason")},
        "probe": probe,
        "selectable": info["available"] and not (probe or {}).get("blocked", False),
    }


def list_models(*, config: AppConfig | None = None) -> list[dict[str, Any]]:
    """All configured models in config order; the first is the default."""
    cfg = config or get_app_config()
    return [model_info(m) for m in cfg.models]
