"""The one DRF error handler: domain errors (``apps.errors``) and Django's own, mapped to HTTP.

Every error response is ``{"detail": ...}`` with the status ``STATUS`` gives.
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from apps import errors

logger = logging.getLogger(__name__)


# The status of each domain error; a subclass answers with its nearest listed ancestor's.
STATUS = {
    errors.DomainError: status.HTTP_400_BAD_REQUEST,
    errors.InvalidRequest: status.HTTP_422_UNPROCESSABLE_ENTITY,
    errors.NotFound: status.HTTP_404_NOT_FOUND,
    errors.Forbidden: status.HTTP_403_FORBIDDEN,
    errors.Conflict: status.HTTP_409_CONFLICT,
    errors.PayloadTooLarge: status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    errors.UnsupportedMediaType: status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
    errors.RangeNotSatisfiable: status.HTTP_416_REQUESTED_RANGE_NOT_SATISFIABLE,
    errors.TooManyRequests: status.HTTP_429_TOO_MANY_REQUESTS,
    errors.UpstreamFailed: status.HTTP_502_BAD_GATEWAY,
    errors.ServiceUnavailable: status.HTTP_503_SERVICE_UNAVAILABLE,
}


def http_status(exc: errors.DomainError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return status.HTTP_400_BAD_REQUEST


def api_exception_handler(exc, context):
    if isinstance(exc, errors.DomainError):
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, errors.ServerDraining) else None
        return Response({"detail": exc.detail}, status=http_status(exc), headers=headers)
    if isinstance(exc, RequestDataTooBig):
        # Under our server the body never gets this far (deerflow_site/server/body_limits.py); other
        # servers and the test client reach Django's own cap, which is the same number.
        from django.conf import settings

        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response({"detail": f"request bodies are limited to {limit} bytes (uploads: use multipart/form-data)"},
                        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, DjangoValidationError):
        messages = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        text = "; ".join(f"{k}: {' '.join(v)}" if k != "detail" else " ".join(v) for k, v in messages.items())
        return Response({"detail": text}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = exception_handler(exc, context)
    if response is None:
        # Unexpected: log it once with the traceback, answer with a plain 500 detail.
        logger.exception("Unhandled error in %s", context.get("view").__class__.__name__)
        return Response({"detail": "Internal server error."}, status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    if isinstance(exc, exceptions.ValidationError) and not (isinstance(response.data, dict) and set(response.data) == {"detail"}):
        response.data = {"detail": _flatten(response.data)}
        response.status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    return response


def _flatten(data, prefix: str = "") -> str:
    if isinstance(data, dict):
        return "; ".join(_flatten(v, f"{prefix}.{k}" if prefix else str(k)) for k, v in data.items())
    if isinstance(data, list):
        if all(not isinstance(v, (dict, list)) for v in data):
            return f"{prefix}: {' '.join(str(v) for v in data)}" if prefix else " ".join(str(v) for v in data)
        return "; ".join(_flatten(v, f"{prefix}[{i}]") for i, v in enumerate(data))
    return f"{prefix}: {data}" if prefix else str(data)
