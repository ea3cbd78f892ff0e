"""cogworker in a Django project (``pip install 'cogworker[django]'``).

::

    # settings.py
    INSTALLED_APPS = [..., "cogworker.contrib.django"]
    COGWORKER = {"redis_url": "redis://localhost:6379/0", "concurrency": 10}

    # shop/jobs.py (a "jobs" module in any installed app is imported at start-up)
    from cogworker.contrib.django import app

    @app.job(queue="mail")
    def send_receipt(order_id: int) -> None: ...

    # shop/views.py
    with transaction.atomic():
        order = Order.objects.create(...)
        send_receipt.perform_on_commit(order.id)  # pushed after the commit, never on rollback

    $ DJANGO_SETTINGS_MODULE=mysite.settings cogworker run -A cogworker.contrib.django:app

``app`` is built on first use from ``settings.COGWORKER`` (a dict of cogworker settings,
layered under the config file, ``COGWORKER_*`` and flags as usual); using it sets Django up
first when nothing has (the worker's case). The app config installs the transaction binder,
so that ``perform_on_commit`` and ``on_commit(using="alias")`` on every job use
``django.db.transaction.on_commit``. See ``docs/how-to/django.md``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cogworker.contrib import ensure_installed
from cogworker.core.errors import ConfigurationError, TransactionBinderError
from cogworker.core.transactions import Push

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.core.middleware import JobContext

    app: App  # built on first use by __getattr__

ensure_installed("django", "django")

__all__ = ["DjangoTransactions", "app", "close_old_connections", "get_app"]

_app: App | None = None
_lock = threading.RLock()  # re-entered: setting Django up imports job modules that ask for app


class DjangoTransactions:
    """The transaction binder for Django: ``using`` is a database alias (None: "default")."""

    name = "django"

    def on_commit(self, push: Push, using: object) -> None:
        if using is not None and not isinstance(using, str):
            raise TransactionBinderError(
                f"on_commit(using=...) with Django takes a database alias such as "
                f"'default', not a {type(using).__name__} ({using!r:.60})"
            )
        from django.db import transaction

        transaction.on_commit(push, using=using)


def close_old_connections(ctx: JobContext, call_next: Callable[[], object]) -> object:
    """Server middleware: drop broken or expired database connections around every job, as
    Django does around every request (a worker lives longer than ``CONN_MAX_AGE``)."""
    from django.db import close_old_connections as close

    close()
    try:
        return call_next()
    finally:
        close()


def get_app() -> App:
    """The project's App, built once from ``settings.COGWORKER``; sets Django up if needed."""
    _ensure_django_ready()
    with _lock:
        global _app
        if _app is None:
            _app = _build_app()
        return _app


def __getattr__(name: str) -> Any:
    if name == "app":
        return get_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _ensure_django_ready() -> None:
    from django.apps import apps

    if apps.ready or apps.loading:  # loading: we are being imported while Django sets up
        return
    from django.conf import settings

    if not settings.configured and not os.environ.get("DJANGO_SETTINGS_MODULE"):
        raise ConfigurationError(
            "DJANGO_SETTINGS_MODULE", None, "the import path of the project's settings "
            "module (e.g. mysite.settings) before cogworker.contrib.django:app is used",
            source="the environment",
        )
    import django

    django.setup()
    if not apps.is_installed(__name__):
        raise ConfigurationError(
            "INSTALLED_APPS", "(without cogworker.contrib.django)",
            f"a list that includes {__name__!r}, so that perform_on_commit and the jobs "
            "modules work", source="Django settings",
        )


def _build_app() -> App:
    from django.conf import settings

    from cogworker.app import App

    options = getattr(settings, "COGWORKER", {})
    if not isinstance(options, Mapping):
        raise ConfigurationError("COGWORKER", options, "a dict of cogworker settings",
                                 source="Django settings")
    try:
        app = App(**dict(options))
    except ConfigurationError as exc:
        raise ConfigurationError(exc.field, exc.value, exc.accepted,
                                 source="settings.COGWORKER") from exc
    app.server_middleware.append(close_old_connections)
    return app
