"""Bounded reads shared by the queues and the sets: pages and search windows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cogworker.core.broker import SearchHit, SearchPage
from cogworker.testing.memory_broker.payloads import ascii_lower

Entry = tuple[str, float | None]
"""A raw and its score (None for a queue entry), in the order a read runs."""


def ascending(entries: Mapping[str, float]) -> list[tuple[str, float]]:
    """A set's (raw, score) entries, lowest score first, those of one score by their bytes
    (the order of a Redis sorted set)."""
    return sorted(entries.items(), key=_set_order)


def _set_order(item: tuple[str, float]) -> tuple[float, bytes]:
    raw, score = item
    return score, raw.encode("utf-8", "surrogateescape")


def check_page(start: int, count: int) -> None:
    if start < 0 or count < 0:
        raise ValueError(f"a page needs start >= 0 and count >= 0, not start={start} "
                         f"count={count}")


def check_search(start: int, limit: int, window: int) -> None:
    if limit < 1 or window < 1:
        raise ValueError(f"a search needs limit >= 1 and window >= 1, not limit={limit} "
                         f"window={window}")
    if start < 0:
        raise ValueError(f"a search starts at a position >= 0, not {start}")


def search_window(entries: Sequence[Entry], needle: str, start: int, limit: int,
                  window: int) -> SearchPage:
    """The hits among ``entries[start:start + window]`` (stopping at ``limit`` hits):
    ``needle`` is a plain substring of the raw with its ASCII letters lower-cased."""
    check_search(start, limit, window)
    hits: list[SearchHit] = []
    end = min(start + window, len(entries))
    position = start
    while position < end:
        raw, score = entries[position]
        position += 1
        if needle in ascii_lower(raw):
            hits.append(SearchHit(position - 1, raw, score))
            if len(hits) >= limit:
                break
    examined = max(position - start, 0)
    return SearchPage(tuple(hits), position if position < len(entries) else None, examined)
