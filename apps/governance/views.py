"""Governance API: approvals (answer, pending, audit, rules) and budgets. Routes in api_urls."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import ADMIN_SCOPE, STAFF_ONLY, require_staff
from apps.errors import InvalidRequest
from apps.governance import api_types as types
from apps.governance import selectors, services
from apps.runs.api_types import Run
from apps.runs.serializers import run_json


def _int(value, name: str, default: int) -> int:
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidRequest(f"{name}: must be an integer") from None


class ThreadApprovalView(APIView):
    """GET: the pending approval (or null) and this thread's decisions. POST: answer it."""

    token_scopes = {"GET": "threads:read", "POST": "runs:create"}

    @extend_schema(responses=types.ThreadApprovals)
    def get(self, request, thread_id):
        pending = selectors.pending_approval(user=request.user, thread_id=thread_id)
        return Response({"pending": pending, "decisions": selectors.decision_list(user=request.user, thread_id=thread_id)})

    @extend_schema(request=types.ApprovalAnswer, responses={202: Run})
    def post(self, request, thread_id):
        admitted = services.approval_answer(user=request.user, thread_id=thread_id, body=request.data)
        response = Response(run_json(admitted.run), status=202)
        response["Content-Location"] = f"/api/threads/{admitted.thread.pk}/runs/{admitted.run.pk}"
        return response


class DecisionListView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=types.DecisionList)
    def get(self, request):
        p = request.query_params
        all_users = p.get("all") in ("1", "true")
        if all_users:
            require_staff(request, "Only staff can read everyone's approval decisions")
        return Response({"decisions": selectors.decision_list(user=request.user, all_users=all_users, thread_id=p.get("thread_id"),
                                                              limit=_int(p.get("limit"), "limit", 50), offset=_int(p.get("offset"), "offset", 0))})


class RuleListView(APIView):
    token_scopes = {"GET": "threads:read", "POST": "threads:write"}

    @extend_schema(responses=types.Rules)
    def get(self, request):
        from harness.config.loader import get_app_config

        approvals = get_app_config().approvals
        return Response({"user_rules_enabled": approvals.user_rules, "rules": selectors.rule_list(user=request.user),
                         "operator_rules": [r.describe() for r in approvals.policy.rules]})

    @extend_schema(request=types.RuleWrite, responses={201: types.Rule})
    def post(self, request):
        return Response(selectors.rule_json(services.approval_rule_create(user=request.user, data=request.data)), status=201)


class RuleDetailView(APIView):
    token_scopes = {"DELETE": "threads:write"}

    @extend_schema(responses={204: None})
    def delete(self, request, rule_id: int):
        services.approval_rule_delete(user=request.user, rule_id=rule_id)
        return Response(status=204)


class MyBudgetView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=types.BudgetStatus)
    def get(self, request):
        return Response(selectors.budget_status(user=request.user))


class BudgetAdminView(APIView):
    """Staff: PUT ``/api/budgets/default`` or ``/api/budgets/{user_id}`` with the caps."""

    permission_classes = STAFF_ONLY
    token_scopes = {"PUT": ADMIN_SCOPE}  # a staff member's token with the admin scope

    @extend_schema(request=types.BudgetWrite, responses=types.Budget)
    def put(self, request, target: str):
        user_id = None if target == "default" else _int(target, "user", 0)
        b = services.budget_set(user_id=user_id, data=request.data)
        return Response({"user_id": b.user_id, **{f: (None if getattr(b, f) is None else float(getattr(b, f))) for f in b.CAP_FIELDS},
                         "currency": b.currency, "note": b.note})
