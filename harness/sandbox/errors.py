"""Errors raised by sandboxes.

Every message is written for the model: it says what was wrong and what to do instead,
because tools hand it back verbatim as the tool result.
"""

from __future__ import annotations


class SandboxError(Exception):
    """A sandbox operation the model asked for cannot be done; the message says why."""


class SandboxPathError(SandboxError):
    """A path that is malformed or would leave this thread's directories."""


class SandboxUnavailable(SandboxError):
    """The configured sandbox provider cannot run on this machine."""
