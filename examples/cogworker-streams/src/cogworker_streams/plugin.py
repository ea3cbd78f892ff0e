"""The ``streams`` plugin: its hook implementations (entry point ``streams``).

Activated with ``cogworker run --plugin streams`` (or ``plugins = ["streams"]`` in the
settings): a plugin that implements ``cogworker_make_fetcher`` and is named explicitly takes
the fetch slot from the default ``reliable``.
"""

from __future__ import annotations

import logging

import cogworker
from cogworker.core.broker import Broker, LockClaim, Relock
from cogworker.core.errors import ConfigurationError
from cogworker.core.plugin_host import PluginHost, PluginHostBase
from cogworker.redis import RedisAccess
from cogworker_streams.fetcher import StreamsFetcher
from cogworker_streams.names import RedisBackedBroker, parse_job

PLUGIN_NAME = "streams"
logger = logging.getLogger(__name__)


@cogworker.hookimpl
def cogworker_configure(app: PluginHostBase) -> None:
    """The strategy has no options of its own: it reads ``fetch_idle_max_interval``,
    ``orphan_threshold`` and ``max_orphanings`` like the built-in ones. A misspelt option is
    a start-up error, not a silent no-op."""
    for name, value in app.options(PLUGIN_NAME).items():
        raise ConfigurationError(
            f"plugin_options.{PLUGIN_NAME}.{name}", value,
            "no such option: the streams fetch strategy has none (it uses the settings "
            "fetch_idle_max_interval, orphan_threshold and max_orphanings)")


@cogworker.hookimpl
def cogworker_make_fetcher(app: PluginHost, broker: Broker) -> StreamsFetcher | None:
    """The streams fetcher on a Redis broker; None on any other (the slot then goes to the
    next fetch plugin, e.g. ``basic``)."""
    if not isinstance(broker, RedisAccess):
        logger.warning("the streams fetch strategy needs a Redis broker, not %s; it steps "
                       "aside", broker.name)
        return None
    redis_broker: RedisBackedBroker = broker
    return StreamsFetcher(redis_broker, app.identity, requeue_lock(app),
                          idle_max_interval=app.settings.fetch_idle_max_interval)


def requeue_lock(app: PluginHost) -> Relock:
    """The lock a requeue re-takes, as the ``cogworker_requeue_lock`` hook names it (the
    ``periodic-locks`` plugin names an ``until_executed`` cron run's running lock). Never
    raises: a payload that is not a job, or a hook that fails, means no lock (logged)."""

    def relock(raw: str) -> LockClaim | None:
        job = parse_job(raw)
        if job is None:
            return None
        try:
            return app.hooks.requeue_lock(app, job)
        except Exception:
            logger.exception("the requeue-lock hook failed for jid=%s; requeued without a "
                             "lock", job.get("jid", "?"))
            return None

    return relock
