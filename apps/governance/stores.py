"""The harness's governance ports on the ORM."""

from __future__ import annotations

from apps.governance.models import ApprovalDecision, ApprovalRule
from harness.governance.budget import BudgetWindow
from harness.governance.stores import ApprovalRecord


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
