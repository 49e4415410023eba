"""Model probes: run the battery, store the latest result per model, and answer "may this
model be picked for the agent?" cheaply (a per-process cache, dropped on every save here and
after ``CACHE_SECONDS`` elsewhere) so run admission pays nothing measurable."""

from __future__ import annotations

import threading
import time

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from apps.governance.models import ModelProbe
from harness.config.loader import get_app_config
from harness.governance.probe import ProbeResult, probe_model

CACHE_SECONDS = 30
_blocked: tuple[float, dict[str, str]] | None = None
_lock = threading.Lock()


def probe_store(result: ProbeResult) -> ModelProbe:
    row, _ = ModelProbe.objects.update_or_create(model_name=result.model, defaults={
        "status": result.status, "failed_steps": result.failed_steps, "steps": result.as_dict()["steps"],
        "blocks_agent": result.blocks_agent, "probed_at": timezone.now()})
    return row


def models_probe(*, names: list[str] | None = None) -> list[ModelProbe]:
    """Probe the named models (default: every configured one) and store the results. Blocking:
    called from the management command and the admin, never from a run."""
    config = get_app_config()
    targets = names or [m.name for m in config.models]
    return [probe_store(probe_model(name, config=config)) for name in targets]


def blocked_models() -> dict[str, str]:
    """{model name: why} for models users may not pick for the agent."""
    global _blocked
    now = time.monotonic()
    with _lock:
        if _blocked is not None and now - _blocked[0] < CACHE_SECONDS:
            return _blocked[1]
    rows = ModelProbe.objects.filter(blocks_agent=True, allow_despite_failure=False).values_list("model_name", "failed_steps", "probed_at")
    value = {name: f"failed the {', '.join(steps)} probe on {at:%Y-%m-%d %H:%M} UTC" for name, steps, at in rows}
    with _lock:
        _blocked = (now, value)
    return value


def probe_summaries() -> dict[str, dict]:
    return {p.model_name: {"status": p.status, "failed_steps": p.failed_steps, "probed_at": p.probed_at.isoformat(),
                           "blocked": p.blocked, "allowed_by_admin": p.allow_despite_failure and p.blocks_agent, "steps": p.steps}
            for p in ModelProbe.objects.all()}


@receiver([post_save, post_delete], sender=ModelProbe)
def _probe_changed(**_kwargs) -> None:
    global _blocked
    with _lock:
        _blocked = None
