"""Logging for the command line. The library never configures logging; the CLI does.

One :class:`~cogworker.worker.log_buffer.BufferedLineHandler` on the root logger, writing
text or JSON lines (:mod:`cogworker.worker.log_format`) to stdout or the ``-L`` file.
"""

from __future__ import annotations

import logging
import os
import sys

from cogworker.worker.log_buffer import BufferedLineHandler
from cogworker.worker.log_format import JsonFormatter, TextFormatter

__all__ = ["JsonFormatter", "TextFormatter", "configure_logging", "flush_output"]


def configure_logging(level: str = "INFO", fmt: str = "text", logfile: str | None = None) -> None:
    """Install one handler on the root logger, replacing any there (and closing them)."""
    formatter = JsonFormatter() if fmt == "json" else TextFormatter()
    if logfile:
        stream = open(logfile, mode="a", encoding="utf-8")  # noqa: SIM115 -- the handler's
        handler = BufferedLineHandler(stream, formatter, owns_stream=True)
    else:
        handler = BufferedLineHandler(sys.stdout, formatter)
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
        if isinstance(existing, BufferedLineHandler):
            existing.close()
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
