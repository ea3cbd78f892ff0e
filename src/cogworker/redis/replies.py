"""Reading Redis replies the same way whether or not the client decodes responses."""

from __future__ import annotations


def as_text(value: bytes | str) -> str:
    """A reply as text; bytes that are not UTF-8 are replaced, never an error."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
