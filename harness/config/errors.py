"""The one error type configuration problems raise, with a message fit for a console."""

from __future__ import annotations


class ConfigError(Exception):
    """A configuration file cannot be used.

    ``str(err)`` is a single line naming the file, the field and the reason, e.g.
    ``config.yaml: models[0].use: module 'langchain_foo' is not installed``.
    """

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None):
        self.path = path
        self.field = field
        self.reason = message
        parts = [p for p in (path, field) if p]
        super().__init__(": ".join([*parts, message]))
