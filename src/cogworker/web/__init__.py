"""The cogworker dashboard: an ASGI application (Starlette + Jinja2), installed with
``pip install 'cogworker[web]'``.

::

    from cogworker.web import create_app

    dashboard = create_app(app)                 # ASGI: mount it, or run `cogworker web`
    dashboard = create_app(app, read_only=True)  # every action hidden and refused

Plugins add tabs with the ``cogworker_web_tabs`` hook (returning :class:`Tab`) and decide
who may see and act with ``cogworker_web_authorize``. See ``docs/how-to/mount-dashboard.md``.
"""

from __future__ import annotations

from cogworker.web.application import create_app
from cogworker.web.extension import Dashboard, Tab, dashboard
from cogworker.web.settings import WebSettings

__all__ = ["Dashboard", "Tab", "WebSettings", "create_app", "dashboard"]
