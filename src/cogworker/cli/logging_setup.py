"""Logging for the command line. The library never configures logging; the CLI does."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

_EXTRA_FIELDS = ("jid", "queue", "job_class", "identity")


class TextFormatter(logging.Formatter):
    """``<UTC ISO-8601> pid=<pid> <LEVEL>: <message> [jid=… queue=…]``."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        millis = int(record.msecs)
        text = f"{stamp}.{millis:03d}Z pid={record.process} {record.levelname}: "
        text += record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the job fields when present."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname,
            "pid": record.process,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in _EXTRA_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                entry[field] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(level: str = "INFO", fmt: str = "text", logfile: str | None = None) -> None:
    """Install one handler on the ``cogworker`` root logger and the root logger."""
    handler: logging.Handler
    if logfile:
        handler = logging.FileHandler(logfile, mode="a", encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    if os.environ.get("COGWORKER_TRACE_PLUGINS") == "1":
        logging.getLogger("cogworker.core.plugins").setLevel(logging.DEBUG)


def flush_output() -> None:
    """Flush every handler and both streams (before a hard exit)."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
