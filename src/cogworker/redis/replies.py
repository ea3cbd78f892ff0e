"""Reading Redis replies the same way whether or not the client decodes responses.

Two readings: :func:`as_text` for showing (invalid UTF-8 replaced), and :func:`text` with
:func:`wire` for raw payloads, which must travel back to Redis byte for byte (invalid UTF-8
kept with ``surrogateescape``, see :mod:`cogworker.core.broker`).
"""

from __future__ import annotations


def as_text(value: bytes | str) -> str:
    """A reply as text; bytes that are not UTF-8 are replaced, never an error."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def text(value: bytes | str) -> str:
    """A reply as ``str``; bytes that are not UTF-8 are kept (``surrogateescape``)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def wire(raw: str) -> bytes:
    """The exact bytes of a raw payload read with :func:`text`, to match it in Redis."""
    return raw.encode("utf-8", "surrogateescape")
