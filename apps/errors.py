"""The domain errors, by the name the apps import them: defined in ``harness.errors`` (plain
exceptions, no framework), so the embedded client raises the very same ones."""

from harness.errors import (AlreadyInitialized, Conflict, DomainError, Forbidden, InvalidRequest, NotFound, PayloadTooLarge,
                            RangeNotSatisfiable, ServerDraining, ServiceUnavailable, ThreadBusy, ThreadStorageConflict,
                            TooManyRequests, UnsupportedMediaType, UpstreamFailed)

__all__ = ["AlreadyInitialized", "Conflict", "DomainError", "Forbidden", "InvalidRequest", "NotFound", "PayloadTooLarge",
           "RangeNotSatisfiable", "ServerDraining", "ServiceUnavailable", "ThreadBusy", "ThreadStorageConflict",
           "TooManyRequests", "UnsupportedMediaType", "UpstreamFailed"]
