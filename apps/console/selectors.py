"""Reads for the operator console: component health."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.conf import settings
from django.db import connection

from harness.runtime import checkpointer


@dataclass(frozen=True)
class ComponentHealth:
    status: str  # "ok" | "down"
    backend: str
    error: str = ""

    def as_dict(self) -> dict:
        data = asdict(self)
        if not self.error:
            data.pop("error")
        return data


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def database_health() -> ComponentHealth:
    backend = connection.vendor
    try:
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("select 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "down"; the reason is reported
        return ComponentHealth("down", backend, _reason(exc))
    return ComponentHealth("ok", backend)


def checkpointer_health() -> ComponentHealth:
    url = settings.CHECKPOINTER_URL
    try:
        backend = checkpointer.parse_checkpointer_url(url).backend
        checkpointer.ping(url)
    except Exception as exc:
        return ComponentHealth("down", locals().get("backend", "unknown"), _reason(exc))
    return ComponentHealth("ok", backend)
