"""The Django app config: installs the transaction binder and imports every ``jobs`` module."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules

from cogworker.contrib.django import DjangoTransactions
from cogworker.core.transactions import install_binder


class CogworkerConfig(AppConfig):
    """``"cogworker.contrib.django"`` in ``INSTALLED_APPS``."""

    name = "cogworker.contrib.django"
    label = "cogworker"
    verbose_name = "cogworker"

    def ready(self) -> None:
        install_binder(DjangoTransactions())
        # Every process registers the same jobs: a worker finds the jobs a view enqueues.
        autodiscover_modules("jobs")
