"""Structured console log formatters.

Both add the ids of the request and run the line was written for (``request_id``,
``run_id``, ``thread_id``), read from ``harness.observability.context`` at format time.
"""

import json
import logging
from datetime import UTC, datetime

from harness.observability.context import log_context

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def _extras(record: logging.LogRecord) -> dict:
    # A record's own extras win over the context: a line about another run says so itself.
    return {**log_context(), **{k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}}


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        line = f"{ts} level={record.levelname} logger={record.name} msg={json.dumps(record.getMessage())}"
        for key, value in _extras(record).items():
            line += f" {key}={json.dumps(value, default=str)}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            **_extras(record),
        }
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)
