"""Waiting on a condition a live process brings about (a server's answer, a model's request):
polled, with a bound that only a broken system reaches, never a timing assertion."""

from __future__ import annotations

import time


def wait_until(condition, what: str, timeout: float = 90.0, *, interval: float = 0.2, ignore: tuple = ()):
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
