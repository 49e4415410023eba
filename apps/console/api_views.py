"""``/api/console/*``: usage, cost and run history for the caller (admins: anyone or all),
the operator's views of active and failing runs, feedback, and CSV exports."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import ADMIN_SCOPE, STAFF_ONLY, require_token_scope
from apps.console import api_types as types
from apps.console import exports, operations, reports
from apps.console.periods import parse_period, parse_scope
from apps.errors import InvalidRequest, NotFound
from apps.runs.selectors import run_find
from apps.runs.services import run_cancel

COMMON = [OpenApiParameter("period", str, description="today, 7d (default), 30d or 90d"),
          OpenApiParameter("since", str, description="first day, YYYY-MM-DD (with until instead of period)"),
          OpenApiParameter("until", str, description="last day, YYYY-MM-DD, inclusive"),
          OpenApiParameter("tz", str, description="IANA time zone the days are cut in (default UTC)"),
          OpenApiParameter("user", str, description="admins: a username or id, or 'all'")]
RUN_FILTERS = [OpenApiParameter("status", str, description="comma-separated statuses"), OpenApiParameter("model", str),
               OpenApiParameter("thread_id", str), OpenApiParameter("limit", int), OpenApiParameter("offset", int)]


def _int(params, name: str, default: int) -> int:
    value = params.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidRequest(f"{name} must be an integer, got {value!r}") from None


def _request_scope(request):
    params = request.query_params
    scope = parse_scope(request.user, params.get("user"))
    if scope.owner_id != request.user.pk:
        # Someone else's numbers, or everyone's: a staff power, so a token needs ``admin`` too.
        require_token_scope(request, ADMIN_SCOPE)
    return scope, parse_period(params)


def _runs_report(request, *, limit_default: int = 50, limit: int | None = None) -> dict:
    scope, period = _request_scope(request)
    p = request.query_params
    return reports.console_runs(scope=scope, period=period, status=p.get("status"), model=p.get("model"), thread_id=p.get("thread_id"),
                                limit=limit or _int(p, "limit", limit_default), offset=0 if limit else _int(p, "offset", 0),
                                max_limit=limit or 500)


class ConsoleStatsView(APIView):
    token_scopes = {"GET": "runs:read"}

    @extend_schema(parameters=COMMON, responses=types.Stats)
    def get(self, request):
        scope, period = _request_scope(request)
        return Response(reports.console_stats(scope=scope, period=period))


class ConsoleRunsView(APIView):
    token_scopes = {"GET": "runs:read"}

    @extend_schema(parameters=COMMON + RUN_FILTERS, responses=types.Runs)
    def get(self, request):
        return Response(_runs_report(request))


class ConsoleUsageView(APIView):
    token_scopes = {"GET": "runs:read"}

    @extend_schema(parameters=COMMON, responses=types.Usage)
    def get(self, request):
        scope, period = _request_scope(request)
        return Response(reports.console_usage(scope=scope, period=period))


class ConsoleRunsExportView(APIView):
    token_scopes = {"GET": "runs:read"}

    @extend_schema(parameters=COMMON + RUN_FILTERS[:3], responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request):
        return exports.runs_csv(_runs_report(request, limit=exports.EXPORT_LIMIT))


class ConsoleUsageExportView(APIView):
    token_scopes = {"GET": "runs:read"}

    @extend_schema(parameters=COMMON, responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request):
        scope, period = _request_scope(request)
        return exports.usage_csv(reports.console_usage(scope=scope, period=period))


FEEDBACK_FILTERS = [OpenApiParameter("rating", str, description="1, -1, up or down"), OpenApiParameter("has_comment", str)]


def _feedback_report(request, *, limit: int | None = None) -> dict:
    scope, period = _request_scope(request)
    p = request.query_params
    return operations.feedback_rows(scope=scope, period=period, rating=p.get("rating"), has_comment=p.get("has_comment"),
                                    limit=limit or _int(p, "limit", 100), offset=0 if limit else _int(p, "offset", 0))


class ConsoleFeedbackView(APIView):
    token_scopes = {"GET": "runs:read"}

    @extend_schema(parameters=COMMON + FEEDBACK_FILTERS, responses=types.FeedbackReport)
    def get(self, request):
        return Response(_feedback_report(request))


class ConsoleFeedbackExportView(APIView):
    token_scopes = {"GET": "runs:read"}

    @extend_schema(parameters=COMMON + FEEDBACK_FILTERS, responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request):
        return exports.feedback_csv(_feedback_report(request, limit=exports.EXPORT_LIMIT))


class ConsoleOverviewView(APIView):
    """Admins: what needs acting on now, across users."""

    permission_classes = STAFF_ONLY
    token_scopes = {"GET": ADMIN_SCOPE}

    @extend_schema(parameters=COMMON, responses=types.Overview)
    def get(self, request):
        params = request.query_params
        scope = parse_scope(request.user, params.get("user") or "all")
        period = parse_period(params)
        return Response({"active_runs": operations.active_runs(scope=scope), "queue": operations.queue_depth(),
                         "failing_runs": operations.failing_runs(scope=scope, period=period),
                         "schedules": operations.schedule_health(scope=scope)})


class ConsoleRunCancelView(APIView):
    """Admins: cancel any user's run (the owner's route is ``/api/threads/{tid}/runs/{rid}/cancel``)."""

    permission_classes = STAFF_ONLY
    token_scopes = {"POST": ADMIN_SCOPE}

    @extend_schema(request=None, responses=types.RunCancelled)
    def post(self, request, run_id):
        run = run_find(run_id=run_id) if _is_uuid(run_id) else None
        if run is None:
            raise NotFound(f"Run {run_id} not found")
        action = request.query_params.get("action", "interrupt")
        wait = request.query_params.get("wait") in ("1", "true")
        run = run_cancel(run=run, action=action, wait=wait)
        return Response({"run_id": str(run.pk), "status": run.status, "cancel_requested": True})


def _is_uuid(value: str) -> bool:
    import uuid

    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
