"""The ``error_backtrace`` field of retry and dead records, as Sidekiq 7 stores it.

Sidekiq 7 keeps a failed job's backtrace in the payload as
``base64(zlib-deflate(JSON array of lines))``; Sidekiq 6 and older kept a plain JSON array.
:func:`compress_backtrace` writes the Sidekiq 7 form, so a Ruby fleet's Web UI can show a
Python job's backtrace; :func:`backtrace_lines` reads either form.
"""

from __future__ import annotations

import base64
import binascii
import json
import traceback
import zlib
from collections.abc import Sequence

FIELD = "error_backtrace"
MAX_LINES = 50
"""The most lines ever stored: a job's ``backtrace`` option may ask for fewer, not more."""
MAX_LINE_CHARS = 500
MAX_DECOMPRESSED_BYTES = 1 << 20
"""A stored backtrace that inflates beyond this is treated as unreadable (a zip bomb)."""


def exception_lines(exc: BaseException, limit: int = MAX_LINES) -> list[str]:
    """The last ``limit`` lines of ``exc``'s formatted traceback, each cut to
    :data:`MAX_LINE_CHARS`, innermost call last (as Python prints it)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    lines = [line[:MAX_LINE_CHARS] for line in text.rstrip("\n").split("\n")]
    return lines[-max(limit, 0):] if limit > 0 else []


def compress_backtrace(lines: Sequence[str]) -> str:
    """``lines`` as Sidekiq 7 stores them: base64 of zlib-deflated compact JSON."""
    data = json.dumps(list(lines), separators=(",", ":"), ensure_ascii=False)
    packed = zlib.compress(data.encode("utf-8", "surrogatepass"), 9)
    return base64.b64encode(packed).decode("ascii")


def backtrace_lines(value: object) -> list[str]:
    """The lines of a stored ``error_backtrace`` (compressed string or plain list).

    Anything unreadable (not base64, not zlib, not a JSON list, too large) gives ``[]``:
    a display helper never raises on someone else's data.
    """
    if isinstance(value, list):
        return [str(line) for line in value]
    if not isinstance(value, str) or not value:
        return []
    try:
        packed = base64.b64decode(value, validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(packed, MAX_DECOMPRESSED_BYTES)
        if inflater.unconsumed_tail:
            return []
        lines = json.loads(data.decode("utf-8", "replace"))
    except (binascii.Error, zlib.error, ValueError, RecursionError):
        return []
    if not isinstance(lines, list):
        return []
    return [str(line) for line in lines]
