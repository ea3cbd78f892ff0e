"""cogworker-streams: a cogworker fetch strategy on Redis Streams consumer groups.

Install it next to cogworker and run ``cogworker run --plugin streams``. The README is the
how-to for writing a fetch strategy; :class:`StreamsFetcher` is the strategy.
"""

from __future__ import annotations

from cogworker_streams.fetcher import StreamsFetcher

__version__ = "0.1.0"

__all__ = ["StreamsFetcher", "__version__"]
