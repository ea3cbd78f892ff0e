"""What starting or reading a workflow needs of its app: the plugin's options and the
results store, with a clear error when either is missing."""

from __future__ import annotations

from typing import cast

from cogworker.core.broker import RESULTS, ResultStore
from cogworker.core.enqueuer import EnqueueHost
from cogworker.core.plugin_host import PluginHost
from cogworker.plugins.workflows_options import OPTIONS_KEY, PLUGIN_NAME, WorkflowOptions
from cogworker.workflows.errors import WorkflowError


def plugin_host(host: EnqueueHost | PluginHost) -> PluginHost:
    """The app behind a signature (an :class:`cogworker.App` is both views)."""
    if not hasattr(host, "broker") or not hasattr(host, "extras"):
        raise WorkflowError(f"{host!r} is not a cogworker app: workflows need the app their "
                            "jobs were declared on")
    return cast("PluginHost", host)


def options_of(app: PluginHost) -> WorkflowOptions:
    """The workflows plugin's options; :class:`WorkflowError` when it is not active."""
    options = app.extras.get(OPTIONS_KEY)
    if not isinstance(options, WorkflowOptions):
        app.hooks  # noqa: B018 -- loads and configures the plugins (a chain may come first)
        options = app.extras.get(OPTIONS_KEY)
    if not isinstance(options, WorkflowOptions):
        raise WorkflowError(f"the {PLUGIN_NAME} plugin is not active in this app, so no "
                            f"step would pass its result on: add {PLUGIN_NAME!r} to "
                            f"default_plugins (or run with --plugin {PLUGIN_NAME}), on the "
                            "workers too")
    return options


def result_store(app: PluginHost) -> ResultStore:
    """The broker's results facet; :class:`WorkflowError` when it has none."""
    store = app.broker.extension(RESULTS)
    if store is None:
        raise WorkflowError(f"the {app.broker.name} broker keeps no results (no "
                            f"{RESULTS.name!r} facet): workflows need a broker that does "
                            "(redis, memory)")
    return store
