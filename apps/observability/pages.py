"""The operator's Observability page: is tracing on and where to, are metrics on and who may
scrape, and which runs a request id started (the id a client got back in X-Request-ID)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from apps.runs.selectors import runs_for_operator
from harness.config.loader import get_app_config
from harness.observability import tracing
from harness.observability.context import is_request_id

MAX_QUERY = 128


@login_required
def observability_page(request):
    if not request.user.is_staff:
        raise PermissionDenied("the observability page is for administrators")
    query = (request.GET.get("request_id") or "").strip()
    error = ""
    if query and not is_request_id(query):
        error = f"“{query[:MAX_QUERY]}” is not a request id: 1–128 characters of letters, digits and . _ : @ / + = -"
        query = ""
    runs = runs_for_operator(request_id=query or None)
    rows = [{
        "run": run,
        "seconds": (run.finished_at - run.started_at).total_seconds() if run.finished_at and run.started_at else None,
    } for run in runs]
    return render(request, "observability/index.html", {
        "tracing": tracing.describe(get_app_config().tracing),
        "metrics": {
            "enabled": settings.METRICS_ENABLED,
            "token": bool(settings.METRICS_TOKEN),
            "allowed": [ip for ip in settings.METRICS_ALLOWED_IPS if ip.strip()],
            "multiprocess": bool(settings.PROMETHEUS_MULTIPROC_DIR),
        },
        "query": query, "error": error, "rows": rows,
    })
