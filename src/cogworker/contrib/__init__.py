"""Integrations with other frameworks, each importing its framework only when it is used.

- :mod:`cogworker.contrib.django` — a Django app: the App configured from
  ``settings.COGWORKER``, ``jobs`` modules found in every installed app, and
  ``perform_on_commit`` bound to ``django.db.transaction.on_commit``
  (``pip install 'cogworker[django]'``).
- :mod:`cogworker.contrib.sqlalchemy` — ``perform_on_commit`` bound to a SQLAlchemy
  ``Session``'s commit (``pip install 'cogworker[sqlalchemy]'``).

``import cogworker`` never imports either framework; importing an integration checks that its
framework is installed and names the extra to install when it is not.
"""

from __future__ import annotations

import importlib.util


def ensure_installed(module: str, extra: str) -> None:
    """Raise ImportError naming the extra when ``module`` is not installed (without importing
    it)."""
    if importlib.util.find_spec(module) is None:
        raise ImportError(
            f"cogworker.contrib.{extra} needs the {module!r} package, which is not "
            f"installed: pip install 'cogworker[{extra}]'"
        )
