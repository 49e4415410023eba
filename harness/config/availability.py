"""Settings of features that have not landed yet.

They are accepted, so a config.yaml written for DeerFlow still loads,
but a setting that asks for one of those features does nothing here: each such setting is
logged as having no effect whenever the file is (re)read, so an operator is never left
believing it works. A feature's issue removes its line when the feature lands.
"""

from __future__ import annotations

from harness.config.app_config import AppConfig

NO_EFFECT = "has no effect: {feature} {verb} not available yet"


def _say(setting: str, feature: str, verb: str = "is") -> str:
    return f"{setting} {NO_EFFECT.format(feature=feature, verb=verb)}"


def inactive_settings(config: AppConfig) -> list[str]:
    """What in ``config.yaml`` asks for a missing feature, one sentence each."""
    found: list[str] = []
    # IM channels landed (issue 30): a provider without an adapter here is reported by the
    # channels worker, which says why each channel stays off.
    return found
