"""Redis glob patterns (``SCAN MATCH``) built from plain text."""

from __future__ import annotations

_GLOB_ESCAPES = str.maketrans({char: "\\" + char for char in "*?[]\\"})


def glob_escape(text: str) -> str:
    """``text`` with the glob characters ``* ? [ ] \\`` escaped: it matches only itself."""
    return text.translate(_GLOB_ESCAPES)


def ascii_case_glob(text: str) -> str:
    """``text`` as a glob matching it in any ASCII case (``ab`` -> ``[aA][bB]``), the other
    glob characters escaped."""
    return "".join(f"[{char.lower()}{char.upper()}]" if char.isascii() and char.isalpha()
                   else glob_escape(char) for char in text)


def ascii_lower(text: str) -> str:
    """``text`` with only its ASCII letters lower-cased (what "ASCII case-insensitive"
    compares)."""
    return "".join(char.lower() if char.isascii() else char for char in text)
