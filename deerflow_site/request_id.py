"""Every request gets an id and a trace id.

The request id is the caller's ``X-Request-ID`` (or the trace id of its ``traceparent``) when
well formed, else a new one. The trace id is the ``traceparent``'s trace id when the caller
sent a valid one (the runs the request starts continue that trace, under that parent span),
else the caller's ``X-Trace-Id`` when well formed, else a new one. Both come back as response
headers (``X-Request-ID``, ``X-Trace-Id``), are set on the request (``request.request_id``,
``request.trace_id``) and held in context variables for the request's log lines and for
``start_run``, which stores them on the run so the worker's log lines and traces carry them.

Sync and async capable, so neither kind of view pays for an adapter hop.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

from harness.observability.context import (
    TRACE_ID_HEADER,
    request_id_from_headers,
    request_id_var,
    trace_from_headers,
    trace_id_var,
    traceparent_var,
)

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
        traceparent = meta.get("HTTP_TRACEPARENT")
        request.request_id = request_id_from_headers(meta.get("HTTP_X_REQUEST_ID"), traceparent)
        request.trace_id, parent = trace_from_headers(meta.get("HTTP_X_TRACE_ID"), traceparent)
        return (request_id_var.set(request.request_id), trace_id_var.set(request.trace_id), traceparent_var.set(parent))

    @staticmethod
    def _end(tokens) -> None:
        for var, token in zip((request_id_var, trace_id_var, traceparent_var), tokens, strict=True):
            var.reset(token)

    @staticmethod
    def _headers(request, response):
        response[HEADER] = request.request_id
        response[TRACE_ID_HEADER] = request.trace_id
        return response

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        tokens = self._begin(request)
        try:
            response = self.get_response(request)
        finally:
            self._end(tokens)
        return self._headers(request, response)

    async def __acall__(self, request):
        tokens = self._begin(request)
        try:
            response = await self.get_response(request)
        finally:
            self._end(tokens)
        return self._headers(request, response)
