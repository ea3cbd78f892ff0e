"""Hook specifications: set-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pluggy

    from cogworker.core.job_options import JobOption
    from cogworker.core.plugin_host import PluginHost

SECTION = "Set-up"
"""The title of these hooks in the hook reference."""


@hookspec(historic=True)
def cogworker_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Add new hook specifications from a plugin.

    Called once per plugin manager, also for plugins registered later (historic).

    :param pluginmanager: the manager; call ``pluginmanager.add_hookspecs(module)``.

    Failure policy: propagates (a broken spec module must stop start-up).

    Implemented by builtin: none.

    Example::

        @cogworker.hookimpl
        def cogworker_addhooks(pluginmanager):
            pluginmanager.add_hookspecs(my_hookspecs)
    """


@hookspec(historic=True)
def cogworker_configure(app: PluginHost) -> None:
    """The app's settings are final; read your plugin options here.

    Called once per app, after plugins are activated (historic: late plugins see it too).

    :param app: the application; ``app.settings.plugin_options.get("myplugin", {})``.

    Failure policy: propagates (a plugin that cannot configure itself stops start-up).

    Implemented by builtin: unique, periodic-locks (their per-app state), reliable, redis,
    status, attempts, history, metrics, cancel, limits, batches (each checks its
    ``plugin_options``), otel (its options, and the ``cogworker[otel]`` extra it needs),
    workflows (its options, and the jobs it registers).

    Example::

        @cogworker.hookimpl
        def cogworker_configure(app):
            app.extras["acme"] = AcmeOptions(**app.settings.plugin_options.get("acme", {}))
    """


@hookspec
def cogworker_job_options() -> Sequence[JobOption | str] | None:
    """Declare the job options this plugin reads from payloads or job definitions.

    Called when an app first checks a job's options: at ``@app.job`` (and ``.set()``) for
    the plugins the app's settings activate, and again once ``cogworker`` applied its
    command-line flags. A job may only use declared options, so a misspelt one is an error
    with a did-you-mean where it is written. Options of a plugin deactivated by name
    (``--plugin no:NAME``) stay accepted, and nothing reads them.

    Returns :class:`cogworker.JobOption` objects (a name, the accepted values in words, and
    a ``check`` that returns True for a valid value) or bare names (any JSON value), or
    None. A callable value (``unique_args``) stays on the job's definition
    (``definition.local_options``); any other value is copied into every payload.

    Failure policy: propagates. One name declared by two plugins, or by a plugin and
    cogworker (``queue``, ``retry``, ``backtrace``), is an error naming both.

    Implemented by builtin: unique (``unique``, ``unique_for``, ``unique_args``), cancel
    (``cancel``), limits (``limits``, a list of ``app.limiter`` limits kept on the
    definition).

    Example::

        @cogworker.hookimpl
        def cogworker_job_options():
            return [cogworker.JobOption("tenant", "a tenant slug", lambda v: isinstance(v, str))]
    """
