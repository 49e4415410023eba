"""``/metrics`` and the HTTP metrics, in one middleware installed only when METRICS_ENABLED.

Serving the scrape here, before the URL resolver and the accounts middleware, keeps it out of
the API's authentication (the metrics token is not a personal access token) and keeps an
installation without metrics free of both the route and the per-request timing. With metrics
off the route does not exist: ``/metrics`` is a 404 like any unknown path.

Requests are labelled by their URL pattern (``api/threads/<str:thread_id>/runs``), never by
their path, so ids do not explode the label set. Latency is the time to the response's
headers: for a stream, the time to its start.
"""

from __future__ import annotations

import time

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpResponse, JsonResponse

from apps.observability.access import refusal
from apps.observability.collectors import QueuedRunsCollector
from harness.observability import metrics

PATH = "/metrics"
_COLLECTORS = (QueuedRunsCollector(),)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _method(request) -> str:
    # A caller chooses the method: unknown ones share one label.
    return request.method if request.method in _METHODS else "other"


def _route(request) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    return match.route or match.view_name or "unmatched"


def _scrape(request) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        response = JsonResponse({"detail": f"metrics: method {request.method} not allowed; use GET"}, status=405)
        response["Allow"] = "GET, HEAD"
        return response
    refused = refusal(request)
    if refused is not None:
        return refused
    body, content_type = metrics.render(_COLLECTORS)
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response


class MetricsMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        if request.path == PATH:
            return _scrape(request)
        started = time.perf_counter()
        response = self.get_response(request)
        metrics.http_request(_route(request), _method(request), response.status_code, time.perf_counter() - started)
        return response

    async def __acall__(self, request):
        if request.path == PATH:
            # The scrape reads the database (queued runs): never on the event loop.
            return await sync_to_async(_scrape)(request)
        started = time.perf_counter()
        response = await self.get_response(request)
        metrics.http_request(_route(request), _method(request), response.status_code, time.perf_counter() - started)
        return response
