"""The Prometheus exporter: the fleet's figures read from the broker at scrape time.

A custom ``prometheus-client`` collector (:class:`~cogworker.prometheus.collector.
FleetCollector`) asks the broker on each scrape, so every process and every scrape agree
(per-process counters would not). Serve it standalone with ``cogworker metrics serve``, or
mount :func:`~cogworker.prometheus.serving.asgi_app` / :func:`~cogworker.prometheus.
serving.wsgi_app` in a web application (the dashboard mounts it at ``<prefix>/metrics``).

Needs the ``prometheus`` extra: ``pip install 'cogworker[prometheus]'``.
"""

from __future__ import annotations

import importlib.util

from cogworker.core.errors import DependencyError

EXTRA_HINT = "pip install 'cogworker[prometheus]'"


def require_prometheus_client() -> None:
    """Raise :class:`~cogworker.core.errors.DependencyError` naming the extra to install
    when ``prometheus-client`` is missing."""
    try:
        found = importlib.util.find_spec("prometheus_client") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise DependencyError(
            "the Prometheus exporter needs the prometheus-client library, which is not "
            f"installed; install cogworker's prometheus extra: {EXTRA_HINT}")
