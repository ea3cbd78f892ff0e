"""The built-in tabs, offered through ``cogworker_web_tabs`` like any plugin's.

:func:`cogworker.web.create_app` registers this module on the app's plugin manager (as
``web-tabs``) when it builds the dashboard; a worker process never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookimpl

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.web.extension import Tab

PLUGIN_NAME = "web-tabs"


@hookimpl
def cogworker_web_tabs(app: App) -> list[Tab]:
    """Overview, Jobs, Schedules, Workers, History, Locks and Metrics."""
    from cogworker.web.pages import history, jobs, locks, metrics, overview, schedules, workers

    return [module.tab() for module in (overview, jobs, schedules, workers, history, locks,
                                        metrics)]
