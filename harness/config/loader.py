"""Loading, validating and caching ``config.yaml``.

``get_app_config()`` is cheap enough to call on every run: it re-reads the file and
compares a content digest, so an edit is picked up even where mtime does not move
(network mounts, editors that restore timestamps, two writes within a second).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harness.config.app_config import AppConfig
from harness.config.env import MissingEnvVar, resolve_tree
from harness.config.errors import ConfigError
from harness.config.paths import resolve_config_path

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_cache: dict[Path, tuple[str, AppConfig]] = {}
# How long a config just checked is trusted without looking at its file again. 0, the default,
# looks on every call (a script, a test that edits the file and reads it at once). A server
# sets its CONFIG_RECHECK_SECONDS: every admission and every run asked, and each look was a
# path resolution, a read and a hash, some of it on the runs loop.
_recheck_seconds = 0.0
_recent: dict[str | None, tuple[float, AppConfig]] = {}


def format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def validation_message(err: ValidationError) -> tuple[str, str]:
    """(field, reason) for the first error, with a count of the others."""
    errors = err.errors(include_url=False)
    first = errors[0]
    field = format_loc(first["loc"]) or "(top level)"
    reason = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        reason = "unknown key (check the spelling against config.example.yaml)"
    if len(errors) > 1:
        others = ", ".join(format_loc(e["loc"]) or "(top level)" for e in errors[1:4])
        reason += f" (and {len(errors) - 1} more: {others}{', …' if len(errors) > 4 else ''})"
    return field, reason


def parse_yaml(text: str, display: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"invalid YAML: {where}{problem}", path=display) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a mapping of sections, not {type(data).__name__}", path=display)
    return data


def _resolve_env(data: dict[str, Any], display: str) -> dict[str, Any]:
    """Resolve ``$VAR`` references.

    A model or web provider whose variable is missing stays listed but unavailable, so a
    fresh install without API keys still starts; anywhere else a missing variable is an
    error.
    """
    resolved: dict[str, Any] = {}
    for key, value in data.items():
        if key == "web" and isinstance(value, dict) and isinstance(value.get("providers"), dict):
            web = {k: v for k, v in value.items() if k != "providers"}
            try:
                web = resolve_tree(web, "web")
            except MissingEnvVar as exc:
                raise ConfigError(str(exc), path=display, field=exc.field) from None
            providers: dict[str, Any] = {}
            for name, settings in value["providers"].items():
                try:
                    providers[name] = resolve_tree(settings, f"web.providers.{name}")
                except MissingEnvVar as exc:
                    kept = {k: v for k, v in settings.items()} if isinstance(settings, dict) else {}
                    kept.pop(exc.field.rsplit(".", 1)[-1], None)
                    try:
                        kept = resolve_tree(kept, f"web.providers.{name}")
                    except MissingEnvVar:
                        kept = {}
                    providers[name] = {**kept, "unavailable_reason": f"{exc.field}: {exc}"}
            resolved[key] = {**web, "providers": providers}
            continue
        if key == "channels" and isinstance(value, dict):
            try:
                resolved[key] = _resolve_channels(value)
            except MissingEnvVar as exc:
                raise ConfigError(str(exc), path=display, field=exc.field) from None
            continue
        if key == "models" and isinstance(value, list):
            models = []
            for i, entry in enumerate(value):
                if not isinstance(entry, dict):
                    models.append(entry)
                    continue
                item: dict[str, Any] = {}
                for k, v in entry.items():
                    try:
                        item[k] = resolve_tree(v, f"models[{i}].{k}")
                    except MissingEnvVar as exc:
                        item.setdefault("unavailable_reason", f"{display}: {exc.field}: {exc}")
                models.append(item)
            resolved[key] = models
            continue
        try:
            resolved[key] = resolve_tree(value, str(key))
        except MissingEnvVar as exc:
            raise ConfigError(str(exc), path=display, field=exc.field) from None
    return resolved


def _resolve_channels(value: dict[str, Any]) -> dict[str, Any]:
    """A channel whose credential variable is unset stays configured but off, with the reason
    (the worker logs it): one missing bot token must not stop the server from starting."""
    resolved: dict[str, Any] = {}
    for name, settings in value.items():
        try:
            resolved[name] = resolve_tree(settings, f"channels.{name}")
        except MissingEnvVar as exc:
            if not isinstance(settings, dict):  # a shared key (channels.queue_size, ...)
                raise
            resolved[name] = {"enabled": bool(settings.get("enabled")), "unavailable_reason": f"{exc.field}: {exc}"}
    return resolved


def parse_config(text: str, display: str = "config.yaml") -> AppConfig:
    """Validate the file; DeerFlow's keys are mapped or accepted first (``compat_notes``)."""
    from harness.config.deerflow_compat import translate_config

    data, notes = translate_config(parse_yaml(text, display), display)
    data = _resolve_env(data, display)
    try:
        config = AppConfig.model_validate(data)
    except ValidationError as exc:
        field, reason = validation_message(exc)
        raise ConfigError(reason, path=display, field=field) from None
    config._compat_notes = notes
    return config


def load_config(path: str | Path | None = None) -> AppConfig:
    """Parse the file (or the defaults when it does not exist), without caching."""
    resolved = resolve_config_path(path)
    try:
        text = resolved.read_text(encoding="utf-8")
    except FileNotFoundError:
        logger.warning("No config file at %s; running with defaults and no models. Copy config.example.yaml to start.", resolved)
        return AppConfig()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=str(resolved)) from None
    return parse_config(text, str(resolved))


def _signature(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=str(path)) from None


def set_recheck_seconds(seconds: float) -> None:
    """Trust a config checked less than ``seconds`` ago without reading its file again."""
    global _recheck_seconds
    _recheck_seconds = max(0.0, float(seconds))
    _recent.clear()


def get_app_config(path: str | Path | None = None) -> AppConfig:
    """The current config, re-parsed only when the file's content changed (looked at once per
    ``set_recheck_seconds`` interval when one is set)."""
    if not _recheck_seconds:
        return _checked_config(path)
    key = None if path is None else str(path)
    now = time.monotonic()
    recent = _recent.get(key)
    if recent is not None and now - recent[0] < _recheck_seconds:
        return recent[1]
    config = _checked_config(path)
    _recent[key] = (now, config)
    return config


def _checked_config(path: str | Path | None) -> AppConfig:
    resolved = resolve_config_path(path)
    signature = _signature(resolved)
    cached = _cache.get(resolved)
    if cached and cached[0] == signature:
        return cached[1]
    with _lock:
        cached = _cache.get(resolved)
        if cached and cached[0] == signature:
            return cached[1]
        config = load_config(resolved)
        if cached:
            logger.info("Reloaded %s (content changed)", resolved)
        _cache[resolved] = (signature, config)
        return config


def reset_config_cache() -> None:
    with _lock:
        _cache.clear()
        _recent.clear()
