"""The Redis broker: everything that knows Redis, and nothing outside imports redis-py.

The documented surface for Redis-specific plugins is :class:`RedisAccess` (the broker's
client, keys and scripts, see :mod:`cogworker.redis.access`) and :func:`translate_errors`
(the one error boundary). Both are loaded on first use, so ``import cogworker`` does not
import redis-py.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cogworker.redis.access import RedisAccess
    from cogworker.redis.errors import translate_errors

__all__ = ["RedisAccess", "translate_errors"]

_EXPORTS = {"RedisAccess": "cogworker.redis.access", "translate_errors": "cogworker.redis.errors"}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cogworker.redis' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
