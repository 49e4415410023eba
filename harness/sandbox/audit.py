"""The sandbox audit trail's port: one record per shell or file tool call.

``SandboxAuditMiddleware`` (harness/agents/middlewares/sandbox_audit.py) builds the records; the
store decides where they go. The default store drops them (the embedded client keeps no trail);
the Django side installs one that writes rows, and tests install :class:`MemoryAuditStore`.
Commands can hold secrets, so a record keeps the command's SHA-256 and a bounded preview, never
a file's content. Plain dataclasses cross the wall.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

PREVIEW_CHARS = 200


@dataclass(frozen=True)
class SandboxAuditRecord:
    tool: str
    access: str  # "read" or "write" (harness.tools.file_access)
    digest: str  # SHA-256 of the command (bash) or of the canonical JSON arguments
    preview: str  # the command or the arguments without file content, cut at PREVIEW_CHARS
    paths: list[str] = field(default_factory=list)
    outcome: str = "success"  # success | error (including refusals by an outer layer's answer)
    tool_call_id: str = ""
    thread_id: str = ""
    run_id: str = ""
    user_id: str = ""
    duration_ms: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class SandboxAuditStore(Protocol):
    def record(self, records: list[SandboxAuditRecord]) -> None: ...


class NullAuditStore:
    def record(self, records: list[SandboxAuditRecord]) -> None:
        return None


class MemoryAuditStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[SandboxAuditRecord] = []

    def record(self, records: list[SandboxAuditRecord]) -> None:
        with self._lock:
            self.records.extend(records)


_store: SandboxAuditStore = NullAuditStore()


def set_audit_store(store: SandboxAuditStore) -> None:
    global _store
    _store = store


def get_audit_store() -> SandboxAuditStore:
    return _store


def audit_enabled() -> bool:
    """False while nobody keeps the trail, so the middleware costs nothing then."""
    return not isinstance(_store, NullAuditStore)
