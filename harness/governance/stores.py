"""Ports the governance code needs from storage, with in-memory versions.

``apps/governance/stores.py`` implements them on the ORM and installs itself at startup;
the embedded client and the harness tests use the in-memory ones. Plain dataclasses cross.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ApprovalRecord:
    """One decision about one tool call: who decided, what, under which rule."""

    user_id: str
    thread_id: str
    run_id: str
    tool_call_id: str
    tool: str
    args_digest: str
    rule_name: str
    rule_source: str
    decision: str  # approved | approved_always | approved_by_grant | auto_approved | denied | denied_by_rule | auto_denied
    decided_by: str  # the user's id, "policy", "schedule" or "subagent"
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ApprovalStore(Protocol):
    def record(self, records: list[ApprovalRecord]) -> None: ...

    def user_rules(self, user_id: str) -> list[dict[str, Any]]:
        """The user's own rules, as ``{name, tool, match, action, agents}`` dicts, in order."""


class MemoryApprovalStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[ApprovalRecord] = []
        self.rules: dict[str, list[dict[str, Any]]] = {}

    def record(self, records: list[ApprovalRecord]) -> None:
        with self._lock:
            self.records.extend(records)

    def user_rules(self, user_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.rules.get(str(user_id), []))


_store: ApprovalStore = MemoryApprovalStore()


def set_approval_store(store: ApprovalStore) -> None:
    global _store
    _store = store


def get_approval_store() -> ApprovalStore:
    return _store
