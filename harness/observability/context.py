"""Request and run ids for log lines and traces, carried by context variables.

A context variable follows the work wherever it goes: into the asyncio task a run executes
in, into threads started with ``asyncio.to_thread`` / ``sync_to_async`` (both copy the
context), and into log records, which the formatters read at format time. Nothing is copied
onto records that are never formatted.
"""

from __future__ import annotations

import contextvars
import re
import uuid

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("deerflow_request_id", default=None)
run_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("deerflow_run_id", default=None)
thread_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("deerflow_thread_id", default=None)
# The trace a request belongs to (``X-Trace-Id`` on the response) and the W3C ``traceparent``
# it continues, when the caller sent one: admission stores both on the runs it starts.
trace_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("deerflow_trace_id", default=None)
traceparent_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("deerflow_traceparent", default=None)

TRACE_ID_HEADER = "X-Trace-Id"

# What a caller may hand us as a request id: printable, no spaces or quotes, so it can go into
# a log line, a header and a trace tag unescaped. Anything else is replaced by a fresh id.
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")
# W3C trace context: version-traceid-parentid-flags; an all-zero trace id is invalid.
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_TRACEPARENT_PARTS = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
_OTEL_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


def parse_traceparent(value: str | None) -> tuple[str, str] | None:
    """(trace id, parent span id) of a valid W3C ``traceparent``, else None. All-zero ids
    are invalid (W3C), and so is version ``ff``."""
    if not value:
        return None
    match = _TRACEPARENT_PARTS.match(value.strip().lower())
    if not match or match.group(1) == "ff" or match.group(2) == "0" * 32 or match.group(3) == "0" * 16:
        return None
    return match.group(2), match.group(3)


def trace_from_headers(x_trace_id: str | None, traceparent: str | None) -> tuple[str, str | None]:
    """(trace id, traceparent to continue): a valid ``traceparent`` decides both, as W3C
    trace context asks of every hop; else a well-formed ``X-Trace-Id`` (DeerFlow's header)
    names the trace; else a new one (32 hex, so it can be an OpenTelemetry trace id too)."""
    parsed = parse_traceparent(traceparent)
    if parsed is not None:
        return parsed[0], traceparent.strip().lower()
    if x_trace_id:
        candidate = x_trace_id.strip()
        if _REQUEST_ID.match(candidate):
            return candidate, None
    return new_request_id(), None


def is_otel_trace_id(value: str | None) -> bool:
    """Whether ``value`` can be an OpenTelemetry trace id (what Langfuse files traces by)."""
    return bool(value) and bool(_OTEL_TRACE_ID.match(value)) and value != "0" * 32


def new_request_id() -> str:
    return uuid.uuid4().hex


def request_id_from_headers(x_request_id: str | None, traceparent: str | None) -> str:
    """The caller's ``X-Request-ID`` when well formed, else the trace id of a valid
    ``traceparent``, else a new id."""
    if x_request_id:
        candidate = x_request_id.strip()
        if _REQUEST_ID.match(candidate):
            return candidate
    if traceparent:
        match = _TRACEPARENT.match(traceparent.strip().lower())
        if match and match.group(1) != "0" * 32:
            return match.group(1)
    return new_request_id()


def is_request_id(value: str) -> bool:
    return bool(_REQUEST_ID.match(value))


def current_request_id() -> str | None:
    return request_id_var.get()


def log_context() -> dict[str, str]:
    """The ids to add to a log line written here (only those that are set)."""
    out = {}
    value = request_id_var.get()
    if value:
        out["request_id"] = value
    value = run_id_var.get()
    if value:
        out["run_id"] = value
    value = thread_id_var.get()
    if value:
        out["thread_id"] = value
    return out


def bind_run(run_id: str, *, request_id: str | None = None, thread_id: str | None = None) -> None:
    """Mark the current context (a run's task) as this run's: its log lines carry the ids."""
    run_id_var.set(run_id)
    if request_id:
        request_id_var.set(request_id)
    if thread_id:
        thread_id_var.set(thread_id)


class run_log_context:
    """``with run_log_context(run_id, request_id=…):`` binds the ids for the block and puts
    back what was there: for pool threads that serve one run after another (Celery's)."""

    def __init__(self, run_id: str, *, request_id: str | None = None):
        self._values = ((run_id_var, run_id), (request_id_var, request_id))
        self._tokens: list = []

    def __enter__(self) -> "run_log_context":
        self._tokens = [var.set(value) for var, value in self._values]
        return self

    def __exit__(self, *exc) -> None:
        for (var, _), token in zip(reversed(self._values), reversed(self._tokens)):
            var.reset(token)
