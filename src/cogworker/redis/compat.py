"""What cogworker asks of redis-py, asked explicitly, and a check of the installed redis-py.

The push line (:mod:`cogworker.redis.push_line`) reads one-line RESP2 replies straight off
the socket, so its connections must speak RESP2 and receive nothing the push line did not
ask for. Copying the client pool's settings is not enough for that: from redis-py 7.0 a pool
that speaks RESP3 (the default from 8.0, or ``?protocol=3`` in the URL) puts its own
*maintenance notifications* set-up into those settings, and redis-py refuses that set-up on
a RESP2 connection parsed without hiredis ("Maintenance notifications are only supported
with hiredis and RESP3 parsers!"). So :func:`resp2_connection` keeps the pool's address,
credentials, TLS, timeouts and retry policy and asks for the rest explicitly, in a way every
redis-py from the floor (5.0.2) on accepts:

* ``protocol=2``;
* maintenance notifications off (``MaintNotificationsConfig(enabled=False)`` where redis-py
  has them, 7.0 on), and none of the pool's notification handlers or the ``orig_*``
  addresses they keep;
* no client-side cache: redis-py caches only through the proxy its pool wraps around a
  connection (5.1 on), which a connection made here never gets; ``cache`` and
  ``cache_config`` are dropped should a version leave them among the settings.

:func:`check_redis_py` runs when a client is made (:func:`cogworker.redis.connection.
make_client`): it builds such a connection (without connecting) and raises
:class:`~cogworker.core.errors.DependencyError`, naming the versions and what to install,
if the installed redis-py cannot give one; a redis-py older than :data:`REDIS_PY_FLOOR` is
refused the same way; one newer than the newest major CI tests (:data:`NEWEST_TESTED_MAJOR`)
gets one warning per process and is used.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
import threading
from typing import Any

import redis
import redis.exceptions as rex
import redis.utils

from cogworker.core.errors import DependencyError
from cogworker.core.value_record import ValueRecord

logger = logging.getLogger(__name__)

REDIS_PY_FLOOR = (5, 0, 2)  # keep in step with pyproject.toml's "redis>=5.0.2"
NEWEST_TESTED_MAJOR = 8  # the newest redis-py major a CI leg runs (see dependencies.md)
FLOOR_TEXT = ".".join(map(str, REDIS_PY_FLOOR))
TESTED_RANGE = f"redis>={FLOOR_TEXT},<{NEWEST_TESTED_MAJOR + 1}"

# Settings a pool adds for its own RESP3 features, which a RESP2 connection must not take.
_POOL_RESP3_SETTINGS = frozenset({
    "maint_notifications_config",
    "maint_notifications_pool_handler",
    "oss_cluster_maint_notifications_handler",
    "orig_host_address",
    "orig_socket_timeout",
    "orig_socket_connect_timeout",
    "cache",
    "cache_config",
})

_warned: set[str] = set()
_warn_lock = threading.Lock()


class RedisPy(ValueRecord):
    """The installed redis-py, and the hiredis beside it (a ValueRecord: this module is on
    the first push's path)."""

    _fields = ("version", "hiredis", "hiredis_used")
    __slots__ = _fields
    version: str
    hiredis: str | None  # the hiredis distribution's version, if installed
    hiredis_used: bool  # whether this redis-py parses with it (8.1 needs hiredis >= 3.2)

    def __init__(self, version: str, hiredis: str | None, hiredis_used: bool) -> None:
        super().__init__(version, hiredis, hiredis_used)

    @property
    def release(self) -> tuple[int, ...]:
        """The leading numbers of the version: ``"8.1.0"`` -> ``(8, 1, 0)``."""
        return tuple(int(part) for part in re.findall(r"\d+", self.version)[:3])

    def describe(self) -> str:
        """``redis-py 8.1.0 without hiredis``, ``... with hiredis 3.5.0``, or ``... with
        hiredis 2.4.0 (not used by this redis-py)``."""
        if self.hiredis is None:
            return f"redis-py {self.version} without hiredis"
        unused = "" if self.hiredis_used else " (not used by this redis-py)"
        return f"redis-py {self.version} with hiredis {self.hiredis}{unused}"


def installed() -> RedisPy:
    """The redis-py this process imported, and hiredis as redis-py sees it."""
    try:
        hiredis: str | None = importlib.metadata.version("hiredis")
    except importlib.metadata.PackageNotFoundError:
        hiredis = None
    used = bool(getattr(redis.utils, "HIREDIS_AVAILABLE", False))
    return RedisPy(str(redis.__version__), hiredis, used)


def resp2_connection(pool: Any) -> Any:
    """A new, unconnected connection of ``pool``'s class to where ``pool`` connects, speaking
    RESP2 with no maintenance notifications and no client-side cache (see the module doc).

    Raises :class:`DependencyError` when the installed redis-py refuses such a connection.
    """
    settings = {name: value for name, value in pool.connection_kwargs.items()
                if name not in _POOL_RESP3_SETTINGS}
    settings["protocol"] = 2
    settings.update(_notifications_off())
    try:
        connection = pool.connection_class(**settings)
    except (TypeError, ValueError, rex.RedisError) as exc:
        raise _incompatible(
            f"it refused a RESP2 connection ({type(exc).__name__}: {exc})") from exc
    protocol = getattr(connection, "protocol", 2)
    if str(protocol) != "2":
        raise _incompatible(f"it made a connection speaking RESP{protocol} when asked for RESP2")
    return connection


def driver_options() -> dict[str, Any]:
    """The connection setting that names redis-py's version without reading its metadata.

    From the redis-py that has ``driver_info`` (8.x), every new connection otherwise reads
    redis-py's version from its installed metadata (a file read and an e-mail header parse:
    milliseconds of a fresh process's first push); older ones read it once, at import.
    """
    try:
        from redis.driver_info import DriverInfo
    except ImportError:
        return {}
    return {"driver_info": DriverInfo(lib_version=str(redis.__version__))}


def _notifications_off() -> dict[str, Any]:
    """The setting that turns maintenance notifications off, where redis-py has them."""
    try:
        from redis.maint_notifications import MaintNotificationsConfig
    except ImportError:  # redis-py < 7.0: there is nothing to turn off
        return {}
    return {"maint_notifications_config": MaintNotificationsConfig(enabled=False)}


def check_redis_py(pool: Any) -> None:
    """Refuse a redis-py cogworker cannot push with; warn once about an untested newer one.

    Nothing connects: the connection is only built. Raises :class:`DependencyError`.
    """
    # hiredis's version (its metadata, read from the disk) only for the messages
    release = RedisPy(str(redis.__version__), None, False).release
    if release < REDIS_PY_FLOOR:
        raise _incompatible(f"cogworker needs redis-py {FLOOR_TEXT} or newer")
    resp2_connection(pool)
    if release[0] > NEWEST_TESTED_MAJOR:
        found = installed()
        _warn_once(
            found.version,
            "%s is newer than any redis-py cogworker is tested with (%s to %d.x); it may "
            "work, but if pushing or fetching jobs fails, install a tested one: pip install "
            "'%s'", found.describe(), FLOOR_TEXT, NEWEST_TESTED_MAJOR, TESTED_RANGE)


def _warn_once(key: str, message: str, *args: object) -> None:
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    logger.warning(message, *args)


def _incompatible(reason: str, *, found: RedisPy | None = None) -> DependencyError:
    found = found or installed()
    return DependencyError(
        f"the installed {found.describe()} cannot be used by cogworker: {reason}. Install a "
        f"redis-py cogworker is tested with: pip install '{TESTED_RANGE}'")
