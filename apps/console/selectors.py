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


def redis_health() -> ComponentHealth | None:
    """Redis, when one is configured (``REDIS_URL``); None when the embedded stack needs none."""
    url = settings.REDIS_URL
    if not url:
        return None
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    except Exception as exc:
        return ComponentHealth("down", "redis", _reason(exc))
    finally:
        client.close()
    return ComponentHealth("ok", "redis")


# Once this process has seen every migration applied it stops looking: building the plan reads
# every migration file, and nothing un-applies them under a running release.
_migrated = False


def migrations_health() -> ComponentHealth:
    global _migrated
    if _migrated:
        return ComponentHealth("ok", connection.vendor)
    from django.db.migrations.executor import MigrationExecutor

    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:
        return ComponentHealth("down", connection.vendor, _reason(exc))
    if plan:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:3])
        more = f" and {len(plan) - 3} more" if len(plan) > 3 else ""
        return ComponentHealth("down", connection.vendor, f"{len(plan)} unapplied migration(s): {names}{more}")
    _migrated = True
    return ComponentHealth("ok", connection.vendor)
