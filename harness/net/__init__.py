"""Outbound networking for the harness; everything that fetches a URL goes through
:mod:`harness.net.guard`."""

from harness.net.guard import (
    BlockedURL,
    FetchedResponse,
    FetchTimeout,
    GuardError,
    GuardPolicy,
    GuardedTransport,
    ResponseTooLarge,
    address_problem,
    check_url,
    guarded_client,
    guarded_fetch,
)

__all__ = [
    "BlockedURL", "FetchedResponse", "FetchTimeout", "GuardError", "GuardPolicy", "GuardedTransport",
    "ResponseTooLarge", "address_problem", "check_url", "guarded_client", "guarded_fetch",
]
