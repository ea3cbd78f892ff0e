"""Redis clients from a URL: pooled, kept alive, and retried on connection errors.

Accepted URLs:

* ``redis://[user:password@]host:port/db``, ``rediss://...`` (TLS) and
  ``unix://[user:password@]/path/to/socket?db=0`` — a blocking connection pool (a caller
  waits up to 5 s for a free connection instead of failing at once);
* ``redis+sentinel://[user:password@]host:port[,host2:port2...]/service_name[/db]`` — the
  current master of ``service_name`` as told by those sentinels (redis-py's
  ``SentinelConnectionPool``, which fails over to a new master by itself). Use
  ``rediss+sentinel://`` to talk TLS to the master. The password is used for the master
  and for the sentinels.
* ``redis+cluster://[user:password@]host:port[,host2:port2...][/0]`` — a Redis Cluster, of
  which these nodes are asked which master owns the namespace's hash slot
  (:mod:`cogworker.redis.cluster`); the keys are then hash-tagged whatever the ``cluster``
  setting says. ``rediss+cluster://`` talks TLS.

Every connection waits at most :data:`SOCKET_TIMEOUT` (5 s) for a reply, whatever the
redis-py version's default (redis-py 5 has none: a Redis host that vanished without
closing the connection would hang the caller until TCP gives up, hours later); a
``socket_timeout`` in the URL's query string overrides it. No command cogworker sends
blocks for that long (a blocking fetch waits 2 s). Every connection sends TCP keep-alives
and is PINGed before use after 30 s idle; a pooled connection the server closed meanwhile
(a restart, ``CLIENT KILL``) is noticed when it is taken from the pool and reopened, before
anything is written. A command is never sent
twice: once it is written, a failure is raised (``BrokerUnavailableError``), because it may
have run — redis-py ≥ 6 would otherwise write it again on a new connection and, say, store
a pushed job twice. The one retry kept is a Redis Cluster ``MOVED`` (the command did not
run; :mod:`cogworker.redis.cluster`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from cogworker.core.errors import ConfigurationError
from cogworker.redis.cluster import SlotMovedError, SlotOwner, SlotOwnerPool, namespace_slot
from cogworker.redis.compat import check_redis_py, driver_options
from cogworker.redis.keys import DEFAULT_NAMESPACE

POOL_TIMEOUT = 5.0
SOCKET_TIMEOUT = 5.0  # longer than any blocking command cogworker sends (fetches block 2 s)
HEALTH_CHECK_INTERVAL = 30
CONNECTION_RETRIES = 3  # for a Cluster MOVED only: nothing else is ever sent twice
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
_ACCEPTED = (
    "redis://host:port/db, rediss://host:port/db, unix:///path/to/socket?db=0, "
    "redis+sentinel://host:port[,host:port...]/service_name[/db] or "
    "redis+cluster://host:port[,host:port...]"
)


_CLUSTER_PREFIXES = tuple(f"{scheme}://" for scheme in CLUSTER_SCHEMES)


def is_cluster_url(url: str | None) -> bool:
    """Whether ``url`` names a Redis Cluster (``redis+cluster://``, ``rediss+cluster://``)."""
    return bool(url) and str(url).lower().startswith(_CLUSTER_PREFIXES)


def _connection_options(decode_responses: bool, *, tcp: bool = True) -> dict[str, Any]:
    options: dict[str, Any] = {
        "decode_responses": decode_responses,
        "health_check_interval": HEALTH_CHECK_INTERVAL,
        "socket_timeout": SOCKET_TIMEOUT,
        "retry": Retry(ExponentialBackoff(cap=1.0, base=0.05), CONNECTION_RETRIES,
                       supported_errors=(SlotMovedError,)),
        **driver_options(),
    }
    if tcp:  # unix sockets have no keep-alive option
        options["socket_keepalive"] = True
    return options


def make_client(url: str, *, max_connections: int, decode_responses: bool = False,
                namespace: str = DEFAULT_NAMESPACE) -> redis.Redis:
    """A client for ``url`` whose pool holds at most ``max_connections`` connections.

    ``namespace`` matters for a cluster URL only: its hash slot picks the node. Raises
    :class:`ConfigurationError` when the URL cannot be used, and
    :class:`~cogworker.core.errors.DependencyError` when the installed redis-py cannot give
    the connections cogworker needs (:func:`cogworker.redis.compat.check_redis_py`).
    Nothing connects yet: the first command opens the first connection.
    """
    client = _client(url, max_connections, decode_responses, namespace)
    check_redis_py(client.connection_pool)
    return client


def _client(url: str, max_connections: int, decode_responses: bool,
            namespace: str) -> redis.Redis:
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError as exc:
        raise ConfigurationError("redis_url", redact_url(url), f"{_ACCEPTED} ({exc})") from exc
    if scheme in SENTINEL_SCHEMES:
        return _sentinel_client(url, max_connections, decode_responses)
    if scheme in CLUSTER_SCHEMES:
        return _cluster_client(url, max_connections, decode_responses, namespace)
    if scheme not in ("redis", "rediss", "unix"):
        raise ConfigurationError("redis_url", redact_url(url), _ACCEPTED)
    try:
        pool = redis.BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=POOL_TIMEOUT,
            **_connection_options(decode_responses, tcp=scheme != "unix"),
        )
    except ValueError as exc:
        raise ConfigurationError(
            "redis_url", redact_url(url), f"{_ACCEPTED} ({exc})"
        ) from exc
    return redis.Redis(connection_pool=pool)


def _sentinel_client(url: str, max_connections: int, decode_responses: bool) -> redis.Redis:
    parts = urlsplit(url)  # already parsed once by make_client: cannot raise here
    path = [segment for segment in parts.path.split("/") if segment]
    if not parts.hostname or not path or len(path) > 2:
        raise ConfigurationError(
            "redis_url", redact_url(url), "redis+sentinel://host:port[,host:port...]/"
            "service_name[/db] naming at least one sentinel and the service"
        )
    service_name = unquote(path[0])
    try:
        db = int(path[1]) if len(path) == 2 else 0
        sentinels = _addresses(parts, 26379)
    except ValueError as exc:
        raise ConfigurationError(
            "redis_url", redact_url(url), f"sentinel addresses as host:port and a numeric db "
            f"({exc})"
        ) from exc
    auth = _auth(parts)
    sentinel = Sentinel(  # type: ignore[no-untyped-call, unused-ignore]
        sentinels,
        sentinel_kwargs={**auth, "socket_timeout": POOL_TIMEOUT},
        **auth,
    )
    options = _connection_options(decode_responses)
    if parts.scheme.lower() == "rediss+sentinel":
        options["ssl"] = True
    client: redis.Redis = sentinel.master_for(  # type: ignore[no-untyped-call, unused-ignore]
        service_name, db=db, max_connections=max_connections, **options
    )
    return client


def _cluster_client(url: str, max_connections: int, decode_responses: bool,
                    namespace: str) -> redis.Redis:
    parts = urlsplit(url)  # already parsed once by make_client: cannot raise here
    path = [segment for segment in parts.path.split("/") if segment]
    try:
        nodes = _addresses(parts, 6379)
        if not parts.hostname or path not in ([], ["0"]):
            raise ValueError("a cluster has only database 0")
    except ValueError as exc:
        raise ConfigurationError(
            "redis_url", redact_url(url),
            f"redis+cluster://host:port[,host:port...] naming at least one node ({exc})",
        ) from exc
    ssl = parts.scheme.lower() == "rediss+cluster"
    auth = _auth(parts)
    owner = SlotOwner(nodes, namespace_slot(namespace), {**auth, "ssl": ssl})
    pool = SlotOwnerPool(owner, ssl=ssl, max_connections=max_connections,
                         timeout=POOL_TIMEOUT, **auth, **_connection_options(decode_responses))
    return redis.Redis(connection_pool=pool)


def _auth(parts: SplitResult) -> dict[str, Any]:
    auth: dict[str, Any] = {}
    if parts.username:
        auth["username"] = unquote(parts.username)
    if parts.password:
        auth["password"] = unquote(parts.password)
    return auth


def _addresses(parts: SplitResult, default_port: int) -> list[tuple[str, int]]:
    """``host:port`` pairs of a comma-separated netloc; raises ValueError on a bad port."""
    return [_host_port(item, default_port)
            for item in parts.netloc.rpartition("@")[2].split(",")]


def _host_port(item: str, default_port: int) -> tuple[str, int]:
    host, _, port = item.strip().rpartition(":")
    if not host:
        return item.strip(), default_port
    return host.strip("[]"), int(port)


def redact_url(url: str) -> str:
    """``url`` without its credentials, fit for a log line.

    ``redis://user:secret@host:6379/0`` becomes ``redis://host:6379/0``; a ``password``
    query parameter is replaced by ``***``.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable Redis URL>"
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(
        "password=***" if pair.lower().startswith("password=") else pair
        for pair in parts.query.split("&")
    ) if parts.query else ""
    shown = urlunsplit(SplitResult(parts.scheme, netloc, parts.path, query, parts.fragment))
    if not netloc and url.startswith(f"{parts.scheme}://"):  # unix:///path keeps its slashes
        shown = f"{parts.scheme}://{shown.removeprefix(parts.scheme + ':')}"
    return shown
