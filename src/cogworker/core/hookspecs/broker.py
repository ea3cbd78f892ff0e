"""Hook specifications: broker (chosen by URL scheme)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from pathlib import Path

    from cogworker.core.broker import Broker, BrokerSchemes
    from cogworker.core.settings import Settings

SECTION = "Broker (chosen by URL scheme)"
"""The title of these hooks in the hook reference."""


@hookspec
def cogworker_broker_schemes() -> BrokerSchemes | None:
    """Declare the broker URL schemes this plugin builds brokers for.

    Called when the broker is chosen, and by ``cogworker plugins`` and error messages,
    which name every active broker plugin with its schemes.

    Returns a :class:`cogworker.core.broker.BrokerSchemes`: the schemes without ``://``
    (``("redis", "rediss", "unix")``) and whether the plugin also answers when no URL is
    set (``without_url=True``: the built-in ``redis``, which then runs a private
    redis-server); or None for a plugin that builds no broker.

    Failure policy: propagates. A scheme (or "no URL") claimed by two active plugins is an
    error naming both.

    Implemented by builtin: ``redis`` (``redis``, ``rediss``, ``unix``, the ``+sentinel``
    and ``+cluster`` schemes, and "no URL": the private redis-server).

    Example::

        from cogworker.core.broker import BrokerSchemes

        @cogworker.hookimpl
        def cogworker_broker_schemes():
            return BrokerSchemes(("acme", "acmes"))
    """


@hookspec(firstresult=True)
def cogworker_make_broker(settings: Settings, project_dir: Path,
                          may_start_server: bool) -> Broker | None:
    """Build the broker for the configured URL, if this plugin owns its scheme.

    Asked when an app's broker is first needed (not before: building one never needs a
    connection, but a command that never touches the store never asks).

    :param settings: the final settings; the URL is ``settings.redis_url`` (None: unset).
    :param project_dir: the project folder; a broker that runs a local server keeps its
        data under it.
    :param may_start_server: False for commands that only look (``cogworker stats``): the
        broker must not start a local server then, only use one that already runs.

    Stops at the first non-None result. Each broker plugin answers for the schemes it
    declares (:func:`cogworker_broker_schemes`; see
    :func:`cogworker.core.broker.url_scheme`) and returns None otherwise. A URL no active
    plugin answers for is a ``ConfigurationError`` naming the active broker plugins and
    their schemes.

    Failure policy: propagates (a broker that cannot be built stops the command).

    Implemented by builtin: ``redis`` (a ``RedisBroker`` for its schemes and for no URL).

    Example::

        from cogworker.core.broker import url_scheme

        @cogworker.hookimpl
        def cogworker_make_broker(settings):
            if url_scheme(settings.redis_url) not in ("acme", "acmes"):
                return None
            return AcmeBroker(settings.redis_url, namespace=settings.namespace)
    """
