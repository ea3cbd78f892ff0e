"""One bounded search of a list or sorted set, inside Redis (``search_window.lua``).

The script looks at no more than ``window`` entries and sends back only the matches, so a
search of 100,000 jobs never copies them out of Redis; the caller goes on from
``next_position`` within its own time budget.
"""

from __future__ import annotations

from typing import Literal

from cogworker.core.broker import SearchHit, SearchPage
from cogworker.redis.replies import text
from cogworker.redis.scripts import Scripts

LUA_PACKAGE = "cogworker.redis"
KeyKind = Literal["list", "zset"]


def search_window(scripts: Scripts, key: str, kind: KeyKind, needle: str, *, start: int,
                  newest_first: bool, limit: int, window: int) -> SearchPage:
    """Entries of ``key`` containing ``needle`` (already lower-cased) from ``start``."""
    if limit < 1 or window < 1:
        raise ValueError(f"a search needs limit and window of at least 1, not {limit} and "
                         f"{window}")
    if start < 0:
        raise ValueError(f"a search starts at a position >= 0, not {start}")
    reply = scripts.run(LUA_PACKAGE, "search_window", keys=[key],
                        args=[kind, start, "1" if newest_first else "0", window, needle,
                              limit])
    following, examined = int(reply[0]), int(reply[1])
    hits = []
    for index in range(2, len(reply), 3):
        score = text(reply[index + 2])
        hits.append(SearchHit(int(reply[index]), text(reply[index + 1]),
                              float(score) if score else None))
    return SearchPage(tuple(hits), following if following >= 0 else None, examined)
