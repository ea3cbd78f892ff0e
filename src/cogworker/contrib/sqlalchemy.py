"""Pushing jobs when a SQLAlchemy ``Session`` commits (``pip install 'cogworker[sqlalchemy]'``).

::

    from cogworker.contrib import sqlalchemy as cogworker_sqlalchemy

    cogworker_sqlalchemy.install()                 # once, at start-up

    with Session(engine) as session, session.begin():
        session.add(user)
        session.flush()
        send_welcome.on_commit(using=session).perform_async(user.id)
    # pushed here, after the commit; never if the block rolled back

``install(default=Session)`` with a ``scoped_session`` (or any function returning the current
session) lets ``perform_on_commit(*args)`` name no session. ``using`` takes a ``Session``, a
``scoped_session`` or an ``AsyncSession`` (its ``sync_session`` carries the events).

The rules (tested in ``tests/contrib/test_sqlalchemy.py``):

- pushes wait for the outermost commit; releasing a ``begin_nested()`` savepoint keeps them
  waiting, rolling it back drops the ones registered inside it and only those;
- a rollback, or a session closed without a commit, drops them;
- with no transaction begun on the session (nothing of it awaits a commit) the push is
  immediate, as Django does outside ``atomic()``;
- after the commit every push is tried, in order; the first error then propagates out of
  ``commit()`` (the data is committed, the session is ready for more; the jobs whose push
  failed are not queued, and logged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cogworker.contrib import ensure_installed
from cogworker.core.errors import TransactionBinderError
from cogworker.core.transactions import Push, install_binder

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, SessionTransaction

ensure_installed("sqlalchemy", "sqlalchemy")

__all__ = ["SQLAlchemyTransactions", "install"]

logger = logging.getLogger(__name__)

_PUSHES = "cogworker.pushes"  # the key in Session.info

SessionSource = Callable[[], "Session"]


@dataclass(frozen=True, slots=True)
class _Pending:
    chain: tuple[SessionTransaction, ...]  # the transaction it was registered in, then parents
    push: Push


@dataclass(slots=True)
class _SessionPushes:
    """What one session holds: pushes waiting for a commit, and those a commit released."""

    waiting: list[_Pending] = field(default_factory=list)
    released: list[_Pending] = field(default_factory=list)

    def drop(self, transaction: SessionTransaction) -> None:
        self.waiting = [item for item in self.waiting if transaction not in item.chain]


class SQLAlchemyTransactions:
    """The transaction binder for SQLAlchemy sessions."""

    name = "sqlalchemy"

    def __init__(self, default: SessionSource | None = None) -> None:
        self._default = default

    def on_commit(self, push: Push, using: object) -> None:
        session = self._session(using)
        innermost = session.get_nested_transaction() or session.get_transaction()
        if innermost is None:
            push()
            return
        _pushes_of(session).waiting.append(_Pending(_chain(innermost), push))

    def _session(self, using: object) -> Session:
        from sqlalchemy.orm import Session, scoped_session

        if using is None:
            if self._default is None:
                raise TransactionBinderError(
                    "with SQLAlchemy, name the session: job.on_commit(using=session)"
                    ".perform_async(...), or install(default=...) with a scoped_session "
                    "so that perform_on_commit(...) finds it"
                )
            using = self._default()
        if isinstance(using, scoped_session):
            using = using()
        sync_session = getattr(using, "sync_session", None)  # an AsyncSession
        if isinstance(sync_session, Session):
            using = sync_session
        if not isinstance(using, Session):
            raise TransactionBinderError(
                f"on_commit(using=...) with SQLAlchemy takes a Session, scoped_session or "
                f"AsyncSession, not a {type(using).__name__} ({using!r:.60})"
            )
        return using


def install(default: SessionSource | None = None) -> SQLAlchemyTransactions:
    """Make SQLAlchemy sessions the process's transactions for ``perform_on_commit``.

    ``default``: a ``scoped_session`` or a function returning the current ``Session``, used
    when a call names none. Returns the installed binder.
    """
    binder = SQLAlchemyTransactions(default)
    install_binder(binder)
    return binder


def _chain(transaction: SessionTransaction) -> tuple[SessionTransaction, ...]:
    chain = [transaction]
    while (parent := chain[-1].parent) is not None:
        chain.append(parent)
    return tuple(chain)


def _pushes_of(session: Session) -> _SessionPushes:
    """The session's pushes; listens to its transaction events on first use."""
    pushes: _SessionPushes | None = session.info.get(_PUSHES)
    if pushes is None:
        from sqlalchemy import event

        pushes = session.info[_PUSHES] = _SessionPushes()
        event.listen(session, "after_commit", _after_commit)
        event.listen(session, "after_soft_rollback", _after_soft_rollback)
        event.listen(session, "after_transaction_end", _after_transaction_end)
    return pushes


def _after_commit(session: Session) -> None:
    root = session.get_transaction()
    if root is None or session.in_nested_transaction():
        return  # a savepoint was released: its pushes wait for the outermost commit
    pushes: _SessionPushes = session.info[_PUSHES]
    pushes.released += [item for item in pushes.waiting if item.chain[-1] is root]
    pushes.drop(root)


def _after_soft_rollback(session: Session, previous_transaction: SessionTransaction) -> None:
    # A rollback called on a subtransaction rolls back the enclosing savepoint or root.
    boundary = previous_transaction
    while boundary.parent is not None and not boundary.nested:
        boundary = boundary.parent
    session.info[_PUSHES].drop(boundary)


def _after_transaction_end(session: Session, transaction: SessionTransaction) -> None:
    """The outermost transaction ended: push what its commit released, drop the rest.

    Pushing here rather than in ``after_commit`` leaves the session closed and reusable
    when a push raises: the error then propagates out of ``commit()``.
    """
    if transaction.parent is not None:
        return
    pushes: _SessionPushes = session.info[_PUSHES]
    released, pushes.released = pushes.released, []
    pushes.drop(transaction)
    first_error: Exception | None = None
    for item in released:
        try:
            item.push()
        except Exception as exc:
            logger.exception("a job's push after the commit failed; the job is not queued")
            first_error = first_error or exc
    if first_error is not None:
        raise first_error
