"""404 and 500 answers of our own: JSON ``{"detail"}`` under /api/, a plain page elsewhere.

The 500 page is rendered without a request context: whatever broke the request (the database,
a context processor) must not break its error page too.
"""

from __future__ import annotations

from django.http import HttpResponseNotFound, HttpResponseServerError, JsonResponse
from django.template.loader import render_to_string


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def not_found(request, exception=None):
    if _is_api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return HttpResponseNotFound(render_to_string("404.html"))


def server_error(request):
    if _is_api(request):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return HttpResponseServerError(render_to_string("500.html"))
