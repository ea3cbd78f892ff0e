"""The built-in ``redis`` broker plugin: found and activated like a third party's.

It owns the Redis URL schemes (:data:`REDIS_SCHEMES`) and "no URL": with no ``redis_url``
set anywhere, it uses the project's private redis-server under ``.cogworker/`` (starting it
when the command may, see ``may_start_server``). It builds a
:class:`~cogworker.redis.broker.RedisBroker`; building one connects nowhere yet.

Its options (:data:`OPTIONS`): ``plugin_options.redis.cluster`` (alias ``cluster``: hash-tag
every key for Redis Cluster) and ``plugin_options.redis.push_busy_wait`` (alias
``push_busy_wait``), checked at start-up (``cogworker_configure``).
"""

from __future__ import annotations

import logging
from pathlib import Path

from cogworker.core.broker import BrokerSchemes, url_scheme
from cogworker.core.errors import NoRedisError
from cogworker.core.markers import hookimpl
from cogworker.core.plugin_host import PluginHostBase
from cogworker.core.plugin_options import AliasedOption, read_plugin_options
from cogworker.core.settings import Settings
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import is_cluster_url, make_client, redact_url
from cogworker.redis.keys import KeySchema
from cogworker.redis.lanes import LANES

logger = logging.getLogger(__name__)

REDIS_SCHEMES: tuple[str, ...] = (
    "redis", "rediss", "unix", "redis+sentinel", "rediss+sentinel", "redis+cluster",
    "rediss+cluster",
)
PLUGIN_NAME = "redis"
OPTIONS = (AliasedOption("cluster", alias="cluster"),
           AliasedOption("push_busy_wait", alias="push_busy_wait"))
SPARE_CONNECTIONS = 5 + len(LANES)
"""Pool connections beyond one per job thread: heartbeat, poller, ticker, fetch, pushes,
and the lanes of the claims and acknowledgements (:mod:`cogworker.redis.scripts`)."""


def resolve_url(settings: Settings, project_dir: Path, may_start_server: bool) -> str:
    """The configured URL, or the private server's (started if needed and allowed).

    Raises :class:`~cogworker.core.errors.NoRedisError` when no URL is set, the private
    server is not running and ``may_start_server`` is False.
    """
    if settings.redis_url:
        return settings.redis_url
    # only without a URL: the private server's modules stay off a configured app's path
    from cogworker.redis.server_state import (
        ensure_project_server,
        project_redis_dir,
        project_server_status,
    )

    if may_start_server:
        url = str(ensure_project_server(project_dir))
        logger.info("no Redis URL configured: using the private redis-server at %s",
                    redact_url(url))
        return url
    state = project_server_status(project_dir)
    if state is not None:
        return state.url
    raise NoRedisError(
        "no Redis to look at: no redis_url setting is set (looked for --redis-url, "
        "COGWORKER_REDIS_URL, REDIS_URL, the config file and, with -A, the app's "
        f"App(redis_url=...)), and no private redis-server runs for {project_dir} "
        f"(looked in {project_redis_dir(project_dir)}). Pass --redis-url URL or "
        "-A module:app, or start the private server with `cogworker redis start`"
    )


def redis_options(settings: Settings) -> dict[str, object]:
    """This plugin's validated options (see :mod:`cogworker.core.plugin_options`)."""
    return read_plugin_options(settings, PLUGIN_NAME, OPTIONS)


def key_schema(settings: Settings) -> KeySchema:
    """The key schema of ``settings``: its namespace, hash-tagged in cluster mode."""
    cluster = bool(redis_options(settings)["cluster"]) or is_cluster_url(settings.redis_url)
    return KeySchema(settings.namespace, cluster=cluster)


def build_broker(settings: Settings, project_dir: Path, may_start_server: bool) -> RedisBroker:
    """A :class:`RedisBroker` for ``settings`` (see :func:`resolve_url` for "no URL")."""
    url = resolve_url(settings, project_dir, may_start_server)
    client = make_client(url, max_connections=settings.concurrency + SPARE_CONNECTIONS,
                         namespace=settings.namespace)
    busy_wait = float(redis_options(settings)["push_busy_wait"])  # type: ignore[arg-type]
    return RedisBroker(client, key_schema(settings), dead_max_jobs=settings.dead_max_jobs,
                       dead_timeout=settings.dead_timeout, push_busy_wait=busy_wait, url=url)


@hookimpl  # type: ignore[untyped-decorator, unused-ignore]
def cogworker_configure(app: PluginHostBase) -> None:
    """A bad ``plugin_options.redis`` value fails at start-up, before any broker is built."""
    redis_options(app.settings)


@hookimpl  # type: ignore[untyped-decorator, unused-ignore]
def cogworker_broker_schemes() -> BrokerSchemes:
    """The Redis URL schemes, and "no URL" (the private redis-server)."""
    return BrokerSchemes(REDIS_SCHEMES, without_url=True)


@hookimpl  # type: ignore[untyped-decorator, unused-ignore]
def cogworker_make_broker(settings: Settings, project_dir: Path,
                          may_start_server: bool) -> RedisBroker | None:
    """A :class:`RedisBroker` for a Redis URL or no URL; None for any other scheme."""
    if url_scheme(settings.redis_url) not in (*REDIS_SCHEMES, ""):
        return None
    return build_broker(settings, project_dir, may_start_server)
