"""Log lines as JSON objects, one per line, with secrets taken out.

Drivers (`serve`, and `worker` when it wants to) install `JsonFormatter` on stderr. Fields
passed with `extra=` (operation_id, trace_id, remote_job_id, state...) become keys of the
object. Every message, field and traceback goes through a Redactor holding the secret values
in use, so a token echoed in an error never reaches a log line.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from jobtrail.core.redact import DEFAULT_REDACTOR, Redactor

# What every LogRecord carries by itself; anything else on a record came from `extra=`.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}
_PLAIN = (str, int, float, bool, dict, list, tuple)


class JsonFormatter(logging.Formatter):
    def __init__(self, redactor: Redactor = DEFAULT_REDACTOR) -> None:
        super().__init__()
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        at = datetime.fromtimestamp(record.created, UTC)
        document: dict[str, Any] = {
            "at": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": self.redactor.text(record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key in _STANDARD or key.startswith("_") or value is None:
                continue
            plain = value if isinstance(value, _PLAIN) else str(value)
            document.setdefault(key, self.redactor.json(plain))
        if record.exc_info:
            document["error"] = self.redactor.text(self.formatException(record.exc_info))
        elif record.stack_info:
            document["stack"] = self.redactor.text(self.formatStack(record.stack_info))
        return json.dumps(document, ensure_ascii=False, default=str)


def install_json_logging(
    redactor: Redactor = DEFAULT_REDACTOR,
    *,
    level: int = logging.INFO,
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send every log record of the process to `stream` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(redactor))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    return handler
