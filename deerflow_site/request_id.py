"""Every request gets an id: the caller's ``X-Request-ID`` (or the trace id of its
``traceparent``) when well formed, else a new one. It is returned as ``X-Request-ID``, set on
``request.request_id``, and held in a context variable for the request's log lines and for
``start_run``, which stores it on the run so the worker's log lines and traces carry it too.

Sync and async capable, so neither kind of view pays for an adapter hop.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

from harness.observability.context import request_id_from_headers, request_id_var

HEADER = "X-Request-ID"


class RequestIdMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def _begin(self, request):
        meta = request.META
        request.request_id = request_id_from_headers(meta.get("HTTP_X_REQUEST_ID"), meta.get("HTTP_TRACEPARENT"))
        return request_id_var.set(request.request_id)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        token = self._begin(request)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response[HEADER] = request.request_id
        return response

    async def __acall__(self, request):
        token = self._begin(request)
        try:
            response = await self.get_response(request)
        finally:
            request_id_var.reset(token)
        response[HEADER] = request.request_id
        return response
