"""Executor backends: where ``execute_run(run_id)`` runs. Chosen by ``settings.RUN_EXECUTOR``.

Only the factory below knows the mode; everything else calls ``get_executor().submit``.
"""

from __future__ import annotations

from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class Executor(Protocol):
    def submit(self, run_id: str) -> None: ...


class EmbeddedExecutor:
    """Runs execute as asyncio tasks on this process's runs loop."""

    def submit(self, run_id: str) -> None:
        from apps.runs.runtime import get_runtime
        from apps.runs.worker import execute_run

        get_runtime().start(run_id, execute_run)


_EXECUTORS = {"embedded": EmbeddedExecutor}


def get_executor() -> Executor:
    try:
        return _EXECUTORS[settings.RUN_EXECUTOR]()
    except KeyError:
        raise ImproperlyConfigured(f"RUN_EXECUTOR must be one of {', '.join(_EXECUTORS)}, not {settings.RUN_EXECUTOR!r}") from None
