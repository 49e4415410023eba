"""Governance reads: the pending approval of a thread, the audit, rules, a user's budget."""

from __future__ import annotations

from typing import Any

from apps.governance.models import ApprovalDecision, ApprovalRule
from apps.threads.selectors import thread_get_for_user
from apps.threads.services import ThreadStatus


def pending_approval(*, user, thread_id: str) -> dict[str, Any] | None:
    """The approval interrupt the thread waits on, or None (not waiting, or waiting for
    something else such as a clarification)."""
    thread = thread_get_for_user(user=user, thread_id=thread_id)
    if thread.status != ThreadStatus.INTERRUPTED:
        return None
    from apps.runs.state import thread_state_get

    state = thread_state_get(thread=thread)
    for item in state.get("interrupts") or []:
        value = item.get("value") if isinstance(item, dict) else None
        if isinstance(value, dict) and value.get("type") == "approval":
            return value
    return None


def decision_json(d: ApprovalDecision) -> dict[str, Any]:
    return {"id": d.pk, "user_id": d.user_id, "thread_id": d.thread_id, "run_id": d.run_id, "tool_call_id": d.tool_call_id,
            "tool": d.tool, "args_digest": d.args_digest, "rule": d.rule_name, "rule_source": d.rule_source,
            "decision": d.decision, "decided_by": d.decided_by, "reason": d.reason, "created_at": d.created_at.isoformat()}


def decision_list(*, user, all_users: bool = False, thread_id: str | None = None, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    rows = ApprovalDecision.objects.all() if all_users and user.is_staff else ApprovalDecision.objects.filter(user=user)
    if thread_id:
        rows = rows.filter(thread_id=thread_id)
    return [decision_json(d) for d in rows[offset : offset + max(1, min(limit, 200))]]


def rule_json(r: ApprovalRule) -> dict[str, Any]:
    return {"id": r.pk, **r.as_rule(), "created_at": r.created_at.isoformat()}


def rule_list(*, user) -> list[dict[str, Any]]:
    return [rule_json(r) for r in ApprovalRule.objects.filter(owner=user)]


def budget_status(*, user) -> dict[str, Any]:
    from harness.config.loader import get_app_config

    cfg = get_app_config().budgets
    if not cfg.enabled:
        return {"enabled": False, "caps": [], "warn_at": cfg.warn_at, "warning": False, "exhausted": False}
    from apps.governance.budgets import budget_window

    window = budget_window(user_id=user.pk)
    caps = [c.as_dict() for c in window.caps] if window else []
    return {"enabled": True, "currency": window.currency if window else None, "caps": caps, "warn_at": cfg.warn_at,
            "warning": any(c["fraction"] >= cfg.warn_at for c in caps), "exhausted": any(c["fraction"] >= 1 for c in caps)}
