"""What the loader did with a DeerFlow-style config: the startup warning and ``config_check``."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from harness.config.deerflow_compat import ACCEPTED, DEERFLOW_SCHEMA_VERSION, MAPPED, CompatNote
from harness.config.upgrade import missing_sections

logger = logging.getLogger("harness.config")


@dataclass
class ConfigReport:
    accepted: list[CompatNote] = field(default_factory=list)
    mapped: list[CompatNote] = field(default_factory=list)
    file_version: int = 0
    supported_version: int = DEERFLOW_SCHEMA_VERSION
    # Top-level sections of config.example.yaml the file lacks (what config_upgrade would add).
    missing_sections: list[str] = field(default_factory=list)

    @property
    def older(self) -> bool:
        return self.file_version < self.supported_version

    def version_line(self) -> str:
        if self.file_version == self.supported_version:
            return f"config_version {self.file_version}: current"
        if self.file_version > self.supported_version:
            return (f"config_version {self.file_version} is newer than this loader knows ({self.supported_version}); "
                    "keys DeerFlow added since are refused by name until the loader learns them")
        adds = ", ".join(self.missing_sections) or "only the new config_version"
        return (f"config_version {self.file_version} is older than {self.supported_version}; "
                f"`manage.py config_upgrade` would add: {adds} (each with its defaults, keeping the file's comments; and config_version: {self.supported_version})")

    def lines(self) -> list[str]:
        out = [self.version_line()]
        if self.mapped:
            out.append(f"mapped ({len(self.mapped)}):")
            out += [f"  {n.key} -> {n.detail}" for n in self.mapped]
        if self.accepted:
            out.append(f"accepted, no effect here ({len(self.accepted)}):")
            out += [f"  {n.key}: {n.detail}" for n in self.accepted]
        return out


def _dedupe(notes: list[CompatNote]) -> list[CompatNote]:
    seen: dict[str, CompatNote] = {}
    for note in notes:
        seen.setdefault(note.key, note)
    return list(seen.values())


def build_report(config: Any, extensions: Any = None, *, raw_keys: list[str] | None = None) -> ConfigReport:
    """``raw_keys``: the file's top-level keys as written (for the sections it lacks)."""
    notes = list(getattr(config, "compat_notes", []) or [])
    if extensions is not None:
        notes += [CompatNote(f"extensions_config.json: {n.key}", n.kind, n.detail) for n in extensions.compat_notes]
    notes = _dedupe(notes)
    report = ConfigReport(
        accepted=[n for n in notes if n.kind == ACCEPTED],
        mapped=[n for n in notes if n.kind == MAPPED],
        file_version=int(getattr(config, "config_version", 0) or 0),
    )
    if report.older and raw_keys is not None:
        try:
            report.missing_sections = missing_sections(raw_keys)
        except OSError:  # no config.example.yaml beside the code
            report.missing_sections = []
    return report


def log_startup_report(config: Any, extensions: Any = None) -> ConfigReport:
    """One warning listing the keys accepted without effect (nothing when there are none)."""
    report = build_report(config, extensions)
    if report.accepted:
        logger.warning(
            "config: %d DeerFlow key(s) accepted with no effect here (manage.py config_check explains each): %s",
            len(report.accepted), ", ".join(n.key for n in report.accepted),
        )
    return report
