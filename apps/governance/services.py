"""Governance writes and checks: approval answers, user rules, budgets, run admission."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import IntegrityError, transaction

from apps.accounts.selectors import user_exists
from apps.errors import Conflict, InvalidRequest, NotFound, TooManyRequests
from apps.governance.models import ApprovalRule, Budget
from apps.governance.probes import blocked_models
from apps.governance.selectors import pending_approval
from apps.runs.lifecycle import Admission
from apps.runs.selectors import thread_last_run_kwargs
from harness.config.loader import get_app_config
from harness.governance.gate import DECISIONS
from harness.governance.policy import RuleError, compile_rule


class BudgetExceeded(TooManyRequests):
    pass


def run_admit(admission: Admission) -> None:
    """The engine's admission check (registered in ``GovernanceConfig.ready``): a model that
    failed its probe may not be picked, and a user at a budget cap starts nothing."""
    name = admission.requested_model
    if name:
        why = blocked_models().get(name)  # cached per process: no query per run
        if why:
            raise InvalidRequest(f"context.model_name: model '{name}' {why}; an admin can allow it in Admin › Model probes")
    if get_app_config().budgets.enabled:  # no budgets configured: no query
        budget_admit(user=admission.user)


def budget_admit(*, user) -> None:
    """Refuse a run when its user is at a cap already. Callers check ``budgets.enabled``."""
    from apps.governance.budgets import budget_window

    window = budget_window(user_id=user.pk)
    cap = window.first_reached() if window is not None else None
    if cap is not None:
        raise BudgetExceeded(f"Budget exceeded: {cap.describe()}.")


def _clean_decision(body: Any) -> dict:
    if not isinstance(body, dict):
        raise InvalidRequest("body: must be an object with 'decision' (or 'decisions')")
    reason = body.get("reason", "")
    if not isinstance(reason, str) or len(reason) > 2000:
        raise InvalidRequest("reason: must be text of at most 2000 characters")
    if "decisions" in body:
        per = body["decisions"]
        if not isinstance(per, dict) or not per:
            raise InvalidRequest("decisions: must map tool call ids to decisions")
        for cid, value in per.items():
            decision = value.get("decision") if isinstance(value, dict) else value
            if decision not in DECISIONS:
                raise InvalidRequest(f"decisions.{cid}: must be one of {', '.join(DECISIONS)}")
        return {"decisions": per}
    decision = body.get("decision")
    if decision not in DECISIONS:
        raise InvalidRequest(f"decision: must be one of {', '.join(DECISIONS)}")
    return {"decision": decision, "reason": reason.strip()}


def approval_answer(*, user, thread_id: str, body: Any):
    """Resume a thread waiting for approval with the user's answer; 409 when it is not waiting."""
    from apps.runs.schemas import parse_run_request
    from apps.runs.services import start_run

    answer = _clean_decision(body)
    pending = pending_approval(user=user, thread_id=thread_id)
    if pending is None:
        raise Conflict(f"Thread {thread_id} is not waiting for an approval")
    if "decisions" in answer:
        known = {r["tool_call_id"] for r in pending.get("requests", [])}
        unknown = sorted(set(answer["decisions"]) - known)
        if unknown:
            raise InvalidRequest(f"decisions: no pending call {', '.join(unknown)}")
    # The resumed run must build the same graph as the paused one: reuse its options.
    last = thread_last_run_kwargs(thread_id=thread_id)
    extra = body.get("context") if isinstance(body.get("context"), dict) else dict(last.get("context") or {})
    request = parse_run_request({"assistant_id": "lead_agent", "command": {"resume": answer}, "context": extra,
                                 "stream_mode": ["values", "messages-tuple", "updates"]})
    return start_run(user=user, thread_id=thread_id, request=request)


def approval_rule_create(*, user, data: Any) -> ApprovalRule:
    if not isinstance(data, dict):
        raise InvalidRequest("body: must be an object")
    tools = data.get("tool")
    name = data.get("name")
    if name in (None, "") and isinstance(tools, str) and tools.strip():
        import uuid

        name = f"{tools.split(',')[0].strip()[:40]}-{uuid.uuid4().hex[:6]}"  # a name is only needed to tell rules apart
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 64:
        raise InvalidRequest("name: a name of at most 64 characters is required")
    tools = [t.strip() for t in tools.split(",")] if isinstance(tools, str) else tools
    raw = {"name": name.strip(), "tool": tools, "match": data.get("match") or None, "action": data.get("action"), "agents": data.get("agents") or []}
    try:
        compile_rule(raw, index=0, source="user")
    except RuleError as exc:
        raise InvalidRequest(str(exc)) from None
    try:
        with transaction.atomic():
            return ApprovalRule.objects.create(owner=user, name=raw["name"], tool=",".join(raw["tool"]), match=raw["match"] or "",
                                               action=raw["action"], agents=list(raw["agents"]),
                                               position=ApprovalRule.objects.filter(owner=user).count())
    except IntegrityError:
        raise Conflict(f"You already have a rule named '{raw['name']}'") from None


def approval_rule_delete(*, user, rule_id: int) -> None:
    deleted, _ = ApprovalRule.objects.filter(owner=user, pk=rule_id).delete()
    if not deleted:
        raise NotFound(f"Rule {rule_id} not found")


def _cap(data: dict, key: str, *, money: bool) -> Any:
    value = data.get(key)
    if value is None or value == "":
        return None
    try:
        number = Decimal(str(value)) if money else int(value)
    except (InvalidOperation, ValueError, TypeError):
        raise InvalidRequest(f"{key}: must be a number") from None
    if isinstance(value, bool) or number < 0:
        raise InvalidRequest(f"{key}: must be zero or more (got {value})")
    return number


def budget_set(*, user_id: int | None, data: Any) -> Budget:
    """Set (replace) a user's budget, or with ``user_id=None`` the default for everyone."""
    if not isinstance(data, dict):
        raise InvalidRequest("body: must be an object")
    unknown = sorted(set(data) - {*Budget.CAP_FIELDS, "currency", "note"})
    if unknown:
        raise InvalidRequest(f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join((*Budget.CAP_FIELDS, 'currency', 'note'))}")
    values = {f: _cap(data, f, money=f.endswith("cost")) for f in Budget.CAP_FIELDS}
    currency = data.get("currency", "USD")
    if not isinstance(currency, str) or not 1 <= len(currency) <= 8:
        raise InvalidRequest("currency: a currency code of at most 8 characters")
    if user_id is not None:
        if not user_exists(user_id=user_id):
            raise NotFound(f"User {user_id} not found")
    with transaction.atomic():
        budget = Budget.objects.filter(user_id=user_id).first() if user_id is not None else Budget.objects.filter(is_default=True).first()
        budget = budget or Budget(user_id=user_id)
        for key, value in values.items():
            setattr(budget, key, value)
        budget.currency = currency
        budget.note = str(data.get("note") or "")[:200]
        budget.save()
    return budget
