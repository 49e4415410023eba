"""The domain errors every service raises: plain exceptions, no framework in them.

Services raise these and views do not catch them; the API's one error handler
(``deerflow_site.errors``) decides the HTTP status of each, and the websocket consumer and
the server-rendered pages ask it too. A service reads the same whatever answers the request.

They live in the harness so that logic both the server and the embedded ``DeerFlowClient``
run (uploads, artifacts, settings) raises the same errors in both; ``apps.errors`` is the
name the apps import them by.
"""

from __future__ import annotations


class DomainError(Exception):
    """The request cannot be done as asked; ``detail`` says why, in words for the user."""

    def __init__(self, detail: str):
        self.detail = detail
        super().__init__(detail)


class InvalidRequest(DomainError):
    """The input is wrong; ``detail`` names the field."""


class NotFound(DomainError):
    """Also raised for another user's object: never reveal that it exists."""


class Forbidden(DomainError):
    pass


class Conflict(DomainError):
    """The object is not in a state that allows this now (a run is active, a race was lost)."""


class AlreadyInitialized(Conflict):
    """The first-admin setup was asked for on a server that already has its admin."""


class ThreadBusy(Conflict):
    pass


class ThreadStorageConflict(Conflict):
    """The thread's checkpoints were written in a storage mode this server does not run."""


class PayloadTooLarge(DomainError):
    pass


class UnsupportedMediaType(DomainError):
    pass


class RangeNotSatisfiable(DomainError):
    def __init__(self, detail: str, size: int):
        super().__init__(detail)
        self.size = size


class TooManyRequests(DomainError):
    """A limit the user reached (a budget); waiting or raising the limit helps."""


class ServiceUnavailable(DomainError):
    """Something this server needs is not there now (a model, a sandbox); retry later."""


class ServerDraining(ServiceUnavailable):
    """This server process is shutting down and admits nothing new; ``retry_after`` seconds
    on, another process behind the load balancer takes the retry."""

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail)
        self.retry_after = retry_after


class UpstreamFailed(DomainError):
    """Something this server called failed (a run could not be started for a trigger)."""
