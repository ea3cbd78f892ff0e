"""The one boundary where Redis errors become cogworker errors (cause kept).

Core code never catches ``redis.*``: everything Redis-specific raises through
:func:`translate_errors`, which maps

* connection errors, timeouts, and replies starting with ``READONLY``, ``LOADING``,
  ``MASTERDOWN``, ``TRYAGAIN``, ``BUSY``, or a cluster's ``MOVED``, ``ASK`` and
  ``CLUSTERDOWN`` (also inside a Lua error) to :class:`BrokerUnavailableError` — retry
  later, nothing is wrong with the data (a refused command did not run);
* "unknown command" replies (also from inside a script) to :class:`UnsupportedCommandError`;
* a refused password or user (``WRONGPASS``, ``NOAUTH``) to
  :class:`BrokerAuthenticationError`, which is not "unavailable": retrying never fixes it;
* ACL refusals (``NOPERM``, also from inside a script) to :class:`BrokerPermissionError`,
  whose message says what to grant;
* ``OOM`` (``maxmemory`` reached with ``noeviction``, also from inside a script, which
  Redis refuses at its first memory-growing write) to :class:`BrokerFullError`;
* every other Redis error to :class:`BrokerError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import redis.exceptions as rex

from cogworker.core.errors import (
    BrokerAuthenticationError,
    BrokerError,
    BrokerFullError,
    BrokerPermissionError,
    BrokerUnavailableError,
    UnsupportedCommandError,
)

_UNAVAILABLE_WORDS = ("READONLY", "LOADING", "MASTERDOWN", "TRYAGAIN", "BUSY", "MOVED", "ASK",
                      "CLUSTERDOWN")
# The patterns are compiled by ``re`` at their first use (and kept in its cache), not when
# this module is imported at every process's first push: only an error needs them.
# The reply's own first word, or one quoted by a script or pipeline error ("…: -READONLY …",
# "… caused error: READONLY …"); never a word that merely appears inside a payload.
_UNAVAILABLE_PATTERN = rf"(?:^|: -?|\s-)({'|'.join(_UNAVAILABLE_WORDS)})(?:\s|$)"
_UNKNOWN_COMMAND_PATTERN = r"unknown (?:redis )?command"  # matched ignoring case
# NOPERM replies; inside a script Redis 6.2 words it "The user executing the script can't …"
# OOM from inside a script: "Error running script (…): @user_script:53: … -OOM command …"
_OUT_OF_MEMORY_PATTERN = r"(?:: -?|\s-)OOM command not allowed"
_NO_PERMISSION_PATTERN = r"NOPERM|no permissions to|user executing the script can't"
ACL_ADVICE = ("the Redis user's ACL does not allow it: give the user cogworker's keys and "
              "channels, e.g. ACL SETUSER <user> ~cogworker:* ~periodic:* resetchannels "
              "&cogworker:* +@all -@dangerous (another namespace NS: ~NS:* &NS:*); see the "
              "deploy how-to, 'A Redis user for cogworker'")


def is_unavailable(exc: BaseException) -> bool:
    """Whether a Redis exception means "not reachable right now"."""
    if isinstance(exc, rex.AuthenticationError):
        return False  # a ConnectionError subclass, but retrying a wrong password never helps
    # redis-py strips the reply's first word for these classes, so match them by class
    if isinstance(exc, (rex.ConnectionError, rex.TimeoutError, rex.BusyLoadingError,
                        rex.ReadOnlyError, rex.MasterDownError, rex.TryAgainError,
                        rex.AskError, rex.ClusterDownError)):
        return True
    if isinstance(exc, rex.ResponseError):
        text = str(exc)
        first = text.split(" ", 1)[0]
        return first in _UNAVAILABLE_WORDS or bool(re.search(_UNAVAILABLE_PATTERN, text))
    return False


def is_unknown_command(exc: BaseException) -> bool:
    return isinstance(exc, rex.ResponseError) and bool(
        re.search(_UNKNOWN_COMMAND_PATTERN, str(exc), re.IGNORECASE))


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether Redis refused a write because it is full (``maxmemory``, noeviction)."""
    return isinstance(exc, rex.OutOfMemoryError) or (
        isinstance(exc, rex.ResponseError) and bool(re.search(_OUT_OF_MEMORY_PATTERN, str(exc))))


def is_no_permission(exc: BaseException) -> bool:
    """Whether a Redis exception is an ACL refusal."""
    return isinstance(exc, rex.NoPermissionError) or (
        isinstance(exc, rex.ResponseError) and bool(re.search(_NO_PERMISSION_PATTERN, str(exc))))


def translate(exc: rex.RedisError) -> BrokerError:
    """The cogworker error for a Redis error (the caller raises it ``from exc``)."""
    message = f"Redis error: {type(exc).__name__}: {exc}"
    if isinstance(exc, rex.AuthenticationError):
        return BrokerAuthenticationError(
            f"{message}; Redis refused the credentials: fix the user name and password in the "
            "Redis URL (redis://USER:PASSWORD@host:port/db)")
    if is_unavailable(exc):
        return BrokerUnavailableError(message)
    if is_unknown_command(exc):
        return UnsupportedCommandError(message)
    if is_no_permission(exc):
        return BrokerPermissionError(f"{message}; {ACL_ADVICE}")
    if is_out_of_memory(exc):
        return BrokerFullError(message)
    return BrokerError(message)


@contextmanager
def translate_errors() -> Iterator[None]:
    """Run Redis calls; re-raise their errors as cogworker errors with the cause kept."""
    try:
        yield
    except rex.RedisError as exc:
        raise translate(exc) from exc
