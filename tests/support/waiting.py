"""Waiting on a condition a live process brings about (a server's answer, a model's request):
polled, with a bound that only a broken system reaches, never a timing assertion.

A deadline only stops a hang from holding the suite; it is never a guess at how long something
takes. On a busy machine (load 15 on two cores, as when several people test at once) a server
started from scratch has taken more than two minutes to come up: every wait uses one bound."""

from __future__ import annotations

import time

HANG_SECONDS = 600


def wait_until(condition, what: str, timeout: float = HANG_SECONDS, *, interval: float = 0.2, ignore: tuple = ()):
    """``condition()``'s first truthy value; exceptions of the ``ignore`` types count as not yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except ignore:
            value = None
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"gave up waiting for {what}")
