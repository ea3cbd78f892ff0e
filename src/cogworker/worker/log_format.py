"""The two log line formats, text and JSON, built the same way for a ``LogRecord`` and for a
job line that never became one (:mod:`cogworker.worker.job_log`).

Each formatter turns ``(created, level name, pid, logger name, message, fields)`` into one
line; :meth:`format` feeds it a record's attributes and :meth:`job_line` the fast path's,
so both paths write byte-for-byte the same text. The date and time up to the second are
cached: under load most lines fall in the second the previous one did.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

EXTRA_FIELDS = ("jid", "queue", "job_class", "identity")
"""The ``extra`` fields the JSON format copies into its object, in this order, when set."""

_encode_string = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses


class _SecondStamp:
    """``YYYY-MM-DDTHH:MM:SS`` (UTC) of the last second asked for, rebuilt when it moves on.

    A race between threads only rebuilds the stamp twice: each pair is written as one tuple.
    """

    def __init__(self) -> None:
        self._cached: tuple[int, str] = (-1, "")

    def text(self, second: int) -> str:
        cached_second, stamp = self._cached
        if cached_second != second:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._cached = (second, stamp)
        return stamp


class TextFormatter(logging.Formatter):
    """``<UTC ISO-8601 to the ms>Z pid=<pid> <LEVEL>: <message>`` and any traceback below."""

    def __init__(self) -> None:
        super().__init__()
        self._stamp = _SecondStamp()

    def format(self, record: logging.LogRecord) -> str:
        text = self.line(record.created, record.levelname, record.process, record.name,
                         record.getMessage(), record.__dict__)
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text

    def line(self, created: float, level: str, pid: int | None, name: str, message: str,
             fields: Mapping[str, Any]) -> str:
        """One line without a traceback; ``name`` and ``fields`` are not part of the text."""
        second = int(created)
        millis = int((created - second) * 1000)
        return f"{self._stamp.text(second)}.{millis:03d}Z pid={pid} {level}: {message}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``pid``, ``logger``, ``message``, then the
    job fields (:data:`EXTRA_FIELDS`) that are set, then ``exception`` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry = _entry(record.created, record.levelname, record.process, record.name,
                       record.getMessage(), record.__dict__)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)

    def line(self, created: float, level: str, pid: int | None, name: str, message: str,
             fields: Mapping[str, Any]) -> str:
        """What :meth:`format` writes for such a record, without building the dict first
        when every value is a string (a job's jid, queue and class are)."""
        parts = [f'{{"ts": {round(created, 6)!r}, "level": {_encode_string(level)}, '
                 f'"pid": {"null" if pid is None else int(pid)}, "logger": {_encode_string(name)}, '
                 f'"message": {_encode_string(message)}']
        for field in EXTRA_FIELDS:
            value = fields.get(field)
            if value is None:
                continue
            if type(value) is not str:
                return json.dumps(_entry(created, level, pid, name, message, fields),
                                  ensure_ascii=False, default=str)
            parts.append(f', "{field}": {_encode_string(value)}')
        parts.append("}")
        return "".join(parts)


def _entry(created: float, level: str, pid: int | None, name: str, message: str,
           fields: Mapping[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"ts": round(created, 6), "level": level, "pid": pid,
                             "logger": name, "message": message}
    for field in EXTRA_FIELDS:
        value = fields.get(field)
        if value is not None:
            entry[field] = value
    return entry


LineFormatter = TextFormatter | JsonFormatter
"""A formatter that can also build a line from its parts (the job lines' fast path)."""
