"""The ``memory`` broker plugin: ``memory://`` URLs are served by a :class:`MemoryBroker`.

Activate it like any plugin (``--plugin memory``, ``plugins = ["memory"]``) and set
``redis_url`` to:

* ``memory://``: a broker of the app's own (each app asks the hook once, so two apps with
  this URL never share jobs);
* ``memory://<name>``: the broker of that name in this process, shared by every app with
  the same URL and namespace (a test's app and the app a CLI command builds, say). It lives
  as long as the process; pick a fresh name per test to keep tests apart.

Everything lives in this process's memory: a worker in another process never sees it.
"""

from __future__ import annotations

import re
import threading

from cogworker.core.broker import Broker, BrokerSchemes, url_scheme
from cogworker.core.errors import ConfigurationError
from cogworker.core.markers import hookimpl
from cogworker.core.settings import Settings
from cogworker.testing.memory_broker.broker import MemoryBroker

SCHEME = "memory"
_NAME = re.compile(r"[A-Za-z0-9_.-]*")
_shared: dict[tuple[str, str], MemoryBroker] = {}
_shared_lock = threading.Lock()


def broker_for_url(url: str, settings: Settings) -> MemoryBroker:
    """The broker ``memory://`` (a new one) or ``memory://<name>`` (the one shared under
    that name and ``settings.namespace``) stands for, capped by ``settings``' dead caps."""
    name = url.partition("://")[2]
    if url_scheme(url) != SCHEME or _NAME.fullmatch(name) is None:
        raise ConfigurationError(
            "redis_url", url, "memory:// or memory://<name> for the memory broker (a name of "
            "letters, digits, '_', '-' and '.')")
    if not name:
        return _new(settings, name)
    with _shared_lock:
        key = (name, settings.namespace)
        if key not in _shared:
            _shared[key] = _new(settings, name)
        return _shared[key]


def _new(settings: Settings, name: str) -> MemoryBroker:
    return MemoryBroker(dead_max_jobs=settings.dead_max_jobs,
                        dead_timeout=settings.dead_timeout, name=name)


@hookimpl
def cogworker_broker_schemes() -> BrokerSchemes:
    return BrokerSchemes((SCHEME,))


@hookimpl
def cogworker_make_broker(settings: Settings) -> Broker | None:
    url = settings.redis_url
    if url is None or url_scheme(url) != SCHEME:
        return None
    return broker_for_url(url, settings)
