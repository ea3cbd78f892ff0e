"""Pushing a job only once a database transaction commits.

A job enqueued inside a transaction can run before the commit and find no row. The
``perform_on_commit`` / ``on_commit(using=...)`` calls of every job hand the push to a
:class:`TransactionBinder` instead, which runs it after the commit and never after a
rollback. The core knows no database framework: an integration installs the binder
(``cogworker.contrib.django`` does it in its ``AppConfig.ready``,
``cogworker.contrib.sqlalchemy.install()`` for SQLAlchemy), and a job module works the same
with or without one — only calling ``perform_on_commit`` needs it.

One binder serves the whole process, because a framework's transactions are process-wide
too (Django's connections, SQLAlchemy's session events).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from cogworker.core.errors import TransactionBinderError

logger = logging.getLogger(__name__)

Push = Callable[[], object]
"""A push waiting for a commit: takes nothing, its result is ignored."""


class TransactionBinder(Protocol):
    """Ties a push to a database transaction. Implemented by the framework integrations."""

    name: str
    """The integration's name, for error messages (``"django"``, ``"sqlalchemy"``)."""

    def on_commit(self, push: Push, using: object) -> None:
        """Arrange for ``push`` to run once the transaction ``using`` names commits.

        ``using`` is the integration's way to name a transaction: a database alias for
        Django, a ``Session`` for SQLAlchemy; ``None`` is its default. Promises:

        - after the outermost commit ``push`` runs exactly once, in the order the pushes
          were registered;
        - after a rollback it never runs; a savepoint rolled back drops only the pushes
          registered inside it;
        - with no transaction in progress it runs at once, inside this call.

        Raises :class:`TransactionBinderError` for a ``using`` it cannot interpret. An
        error raised by ``push`` after the commit propagates to whoever committed.
        """
        ...


_binder: TransactionBinder | None = None
_lock = threading.Lock()


def install_binder(binder: TransactionBinder | None) -> TransactionBinder | None:
    """Make ``binder`` the process's binder (``None`` removes it); returns the previous one."""
    global _binder
    with _lock:
        previous, _binder = _binder, binder
    if previous is not None and binder is not None and previous is not binder:
        logger.info("transaction binder %r replaces %r", binder.name, previous.name)
    return previous


def installed_binder() -> TransactionBinder | None:
    """The process's binder, or None."""
    return _binder


def require_binder() -> TransactionBinder:
    """The process's binder; :class:`TransactionBinderError` naming the fix when none is."""
    binder = _binder
    if binder is None:
        raise TransactionBinderError(
            "perform_on_commit needs a database integration to know when the transaction "
            "commits, and none is installed: add 'cogworker.contrib.django' to "
            "INSTALLED_APPS (Django), or call cogworker.contrib.sqlalchemy.install() "
            "(SQLAlchemy); to push at once, call perform_async instead"
        )
    return binder


def defer_to_commit(using: object) -> Callable[[Push], None]:
    """A function that hands a push to the installed binder for ``using``'s transaction.

    The binder is looked up now, so that a missing integration fails at the call site.
    """
    binder = require_binder()

    def defer(push: Push) -> None:
        binder.on_commit(push, using)

    return defer
