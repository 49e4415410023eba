"""The harness's governance ports on the ORM."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from django.utils import timezone

from apps.governance.models import ApprovalDecision, ApprovalRule, SandboxAuditEntry
from harness.config import get_app_config
from harness.governance.budget import BudgetWindow
from harness.governance.stores import ApprovalRecord
from harness.sandbox.audit import SandboxAuditRecord

# Old audit rows are purged by the process that writes, at most this often.
_PURGE_EVERY_SECONDS = 3600


class OrmApprovalStore:
    def record(self, records: list[ApprovalRecord]) -> None:
        ApprovalDecision.objects.bulk_create([
            ApprovalDecision(user_id=int(r.user_id) if r.user_id.isdigit() else None, thread_id=r.thread_id[:64], run_id=r.run_id[:64],
                             tool_call_id=r.tool_call_id[:128], tool=r.tool[:128], args_digest=r.args_digest, rule_name=r.rule_name[:64],
                             rule_source=r.rule_source, decision=r.decision, decided_by=r.decided_by[:64], reason=r.reason)
            for r in records
        ])

    def user_rules(self, user_id: str) -> list[dict]:
        if not str(user_id).isdigit():
            return []
        return [rule.as_rule() for rule in ApprovalRule.objects.filter(owner_id=int(user_id))]


class OrmBudgetStore:
    def window(self, user_id: str) -> BudgetWindow | None:
        from apps.governance.budgets import budget_window

        if not str(user_id).isdigit():
            return None
        return budget_window(user_id=int(user_id))


class OrmSandboxAuditStore:
    """The sandbox audit trail as rows; called off the event loop by the middleware."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._purged_at = 0.0

    def record(self, records: list[SandboxAuditRecord]) -> None:
        cfg = get_app_config().sandbox_audit
        if not cfg.enabled:
            return
        SandboxAuditEntry.objects.bulk_create([
            SandboxAuditEntry(user_id=int(r.user_id) if r.user_id.isdigit() else None, thread_id=r.thread_id, run_id=r.run_id,
                              tool_call_id=r.tool_call_id, tool=r.tool, access=r.access, digest=r.digest, preview=r.preview,
                              paths=list(r.paths), outcome=r.outcome, duration_ms=max(0, r.duration_ms))
            for r in records
        ])
        self.purge_if_due(cfg.retention_days)

    def purge_if_due(self, retention_days: int, *, force: bool = False) -> int:
        now = time.monotonic()
        with self._lock:
            if not force and now - self._purged_at < _PURGE_EVERY_SECONDS:
                return 0
            self._purged_at = now
        cutoff = timezone.now() - timedelta(days=retention_days)
        deleted, _ = SandboxAuditEntry.objects.filter(created_at__lt=cutoff).delete()
        return deleted
