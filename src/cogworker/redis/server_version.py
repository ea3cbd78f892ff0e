"""The Redis server's version, from ``INFO server``."""

from __future__ import annotations

import logging
import re

import redis

from cogworker.redis.errors import translate_errors

logger = logging.getLogger(__name__)

UNKNOWN_VERSION = (99,)
"""What an unreadable version counts as: a modern server."""
_VERSION_PATTERN = r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?"  # compiled (and cached) by re at first use


class ServerVersion:
    """Reads the version of one client's server (asks afresh on every call)."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client

    def read(self) -> tuple[int, ...]:
        """``redis_version`` from INFO, e.g. (7, 2, 4); (99,) when it cannot be read.
        Redis errors are translated (``BrokerUnavailableError``, ``BrokerError``)."""
        with translate_errors():
            info = self._client.info("server")
        match = re.match(_VERSION_PATTERN, str(info.get("redis_version", "")))
        if match is None:
            logger.warning("unreadable Redis version %r; assuming a modern server",
                           info.get("redis_version"))
            return UNKNOWN_VERSION
        return tuple(int(part) for part in match.groups() if part is not None)
