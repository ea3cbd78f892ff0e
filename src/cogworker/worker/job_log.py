"""Every job's ``start`` and ``done`` lines, cheap enough to stay on at INFO.

Through ``logging`` the two lines cost a worker about 120 µs of CPU per job: a
``LogRecord`` each (with a stack frame lookup), the generic ``%`` formatting, a lock, a
write and a flush per line. When the CLI's :class:`~cogworker.worker.log_buffer.
BufferedLineHandler` is the only handler a line would reach, and nothing could observe the
record (no filter on the logger or the handler), :class:`JobLog` hands the handler the
line's parts instead, and the handler formats them exactly as it formats a record.
Otherwise, with a handler or filter of the user's anywhere on the way, the line goes through
``logger.info`` as any other, with the same ``extra`` fields and the caller's frame.
The logger's level is honoured either way (``isEnabledFor``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from cogworker.worker.log_buffer import BufferedLineHandler

_INFO = logging.INFO


class JobLog:
    """The ``start`` and ``done`` lines of jobs, logged on ``logger`` at INFO."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def start(self, job_class: object, jid: object, queue: str,
              extra: dict[str, Any]) -> None:
        """``start: <class> jid=<jid> queue=<queue>``."""
        if not self.logger.isEnabledFor(_INFO):
            return
        handler = self._only_handler()
        if handler is None:
            self.logger.info("start: %s jid=%s queue=%s", job_class, jid, queue, extra=extra,
                             stacklevel=2)
            return
        handler.job_line(time.time(), logging.getLevelName(_INFO), self.logger.name,
                         f"start: {job_class!s} jid={jid!s} queue={queue!s}", extra)

    def done(self, job_class: object, jid: object, queue: str, elapsed_ms: float,
             extra: dict[str, Any]) -> None:
        """``done: <class> jid=<jid> queue=<queue> in <ms with one decimal> ms``."""
        if not self.logger.isEnabledFor(_INFO):
            return
        handler = self._only_handler()
        if handler is None:
            self.logger.info("done: %s jid=%s queue=%s in %.1f ms", job_class, jid, queue,
                             elapsed_ms, extra=extra, stacklevel=2)
            return
        handler.job_line(time.time(), logging.getLevelName(_INFO), self.logger.name,
                         f"done: {job_class!s} jid={jid!s} queue={queue!s} in "
                         f"{elapsed_ms:.1f} ms", extra)

    def _only_handler(self) -> BufferedLineHandler | None:
        """The CLI's handler when a record of the logger would reach it and nothing else:
        what ``Logger.callHandlers`` would call, filters included, and ``lastResort`` when
        no handler is found (which is not ours)."""
        logger: logging.Logger | None = self.logger
        if self.logger.filters:
            return None
        found: BufferedLineHandler | None = None
        while logger is not None:
            for handler in logger.handlers:
                if found is not None or type(handler) is not BufferedLineHandler:
                    return None
                if handler.filters or handler.level > _INFO:
                    return None
                found = handler
            logger = logger.parent if logger.propagate else None
        return found
