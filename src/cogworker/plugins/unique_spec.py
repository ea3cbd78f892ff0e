"""Which lock a unique job takes, under which name, for how long: the rules, no I/O.

The digest is the original's: SHA-1 hex of ``"<class>|<queue>|<compact JSON of args>"``,
so a Python fleet and a Ruby fleet agree on ``until_executed`` keys. Only the arguments
that count are hashed: all of them, or what the job's ``unique_args`` callable returns
(looked up in this process's registry; a job defined elsewhere counts all its args).

Lock names (``broker.locks``; on Redis the key ``<ns>:<name>``, the original's):

* ``unique:<digest>`` — the *push* lock of ``until_executed`` / ``until_executing``;
* ``unique:<digest>:run`` — the *run* lock of ``while_executing`` (held only while it runs);
* ``unique:<digest>:for`` — the *window* lock of ``unique_for`` alone (expires, never
  released).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from cogworker.core.errors import JobDefinitionError
from cogworker.core.job import UNIQUE_MODES
from cogworker.core.payload import DEFAULT_QUEUE, dumps
from cogworker.core.value_record import ValueRecord
from cogworker.plugins.unique_state import lock_ttl

if TYPE_CHECKING:
    from cogworker.core.plugin_host import PluginHostBase

UNTIL_EXECUTED = "until_executed"
UNTIL_EXECUTING = "until_executing"
WHILE_EXECUTING = "while_executing"

LOCK_PREFIX = "unique:"
RUN_SUFFIX = ":run"
WINDOW_SUFFIX = ":for"

LockKind = Literal["push", "run", "window"]


def digest(job_class: str, queue: str, counted_args: Any) -> str:
    """SHA-1 hex of ``"<class>|<queue>|<compact JSON of counted_args>"``."""
    text = f"{job_class}|{queue}|{dumps(counted_args)}"
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def lock_name(digest_part: str) -> str:
    """The lock name of a digest (``3f2a...``, ``3f2a...:run``): ``unique:<digest part>``."""
    return LOCK_PREFIX + digest_part


def kind_of_lock(name: str) -> LockKind:
    """The kind of a ``unique:...`` lock, from its suffix."""
    if name.endswith(RUN_SUFFIX):
        return "run"
    if name.endswith(WINDOW_SUFFIX):
        return "window"
    return "push"


class UniqueSpec(ValueRecord):
    """The lock rules of one unique job.

    ``mode`` is None for ``unique_for`` alone. ``ttl`` is the push (or window) lock's TTL:
    ``unique_for`` when given, else the plugin's ``lock_ttl`` (alias ``unique_lock_ttl``).
    ``capped`` means the TTL is the user's ``unique_for`` cap, so retries never extend it.
    A ValueRecord: its module is imported at every first push.
    """

    _fields = ("mode", "base_name", "ttl", "capped")
    __slots__ = _fields
    mode: str | None
    base_name: str
    ttl: float
    capped: bool

    def __init__(self, mode: str | None, base_name: str, ttl: float, capped: bool) -> None:
        super().__init__(mode, base_name, ttl, capped)

    @property
    def push_lock(self) -> str | None:
        """The lock taken at push, or None (``while_executing`` takes none)."""
        if self.mode is None:
            return self.base_name + WINDOW_SUFFIX
        if self.mode == WHILE_EXECUTING:
            return None
        return self.base_name

    @property
    def run_lock(self) -> str | None:
        """The lock held while running (``while_executing`` only)."""
        return self.base_name + RUN_SUFFIX if self.mode == WHILE_EXECUTING else None

    @property
    def released_when_done(self) -> bool:
        """Whether the push lock goes when the job finishes (a window lock only expires)."""
        return self.mode in (UNTIL_EXECUTED, UNTIL_EXECUTING)


def _mode(job: Mapping[str, Any]) -> str | None:
    mode = job.get("unique")
    if mode is None or mode is False:
        return None
    if mode not in UNIQUE_MODES:
        raise JobDefinitionError(
            f"job {job.get('class')!r}: unique must be one of {', '.join(UNIQUE_MODES)}, "
            f"not {mode!r}; fix the job's unique= option"
        )
    return str(mode)


def _unique_for(job: Mapping[str, Any]) -> float | None:
    value = job.get("unique_for")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise JobDefinitionError(
            f"job {job.get('class')!r}: unique_for must be a number of seconds > 0, "
            f"not {value!r}"
        )
    return float(value)


def counted_args(app: PluginHostBase, job: Mapping[str, Any]) -> Any:
    """The arguments that make two pushes duplicates: ``unique_args(args)`` or all args."""
    args = job.get("args") or []
    definition = app.registry.get(str(job.get("class")))
    chooser = definition.unique_args if definition is not None else None
    if chooser is None:
        return args
    try:
        chosen = chooser(list(args))
    except Exception as exc:
        raise JobDefinitionError(
            f"unique_args of job {job.get('class')!r} raised {type(exc).__name__}: {exc}; "
            "it must take the argument list and return the arguments that count"
        ) from exc
    try:
        dumps(chosen)
    except (TypeError, ValueError) as exc:
        raise JobDefinitionError(
            f"unique_args of job {job.get('class')!r} returned {chosen!r:.80}, which is not "
            "JSON; return a list of plain values (str, int, float, bool, None, list, dict)"
        ) from exc
    return chosen


def spec_for(app: PluginHostBase, job: Mapping[str, Any]) -> UniqueSpec | None:
    """The lock rules for ``job``, or None when it is not a unique job.

    Raises :class:`JobDefinitionError` for an unknown mode, a bad ``unique_for``,
    ``unique_for`` with ``while_executing`` (which has no lock to cap), or a failing
    ``unique_args``.
    """
    mode, unique_for = _mode(job), _unique_for(job)
    if mode is None and unique_for is None:
        return None
    if mode == WHILE_EXECUTING and unique_for is not None:
        raise JobDefinitionError(
            f"job {job.get('class')!r}: unique_for caps the lock taken at push, and "
            "while_executing takes none; use unique_for alone, or another unique mode"
        )
    job_class = str(job.get("class"))
    queue = str(job.get("queue") or DEFAULT_QUEUE)
    name = lock_name(digest(job_class, queue, counted_args(app, job)))
    ttl = unique_for if unique_for is not None else lock_ttl(app)
    return UniqueSpec(mode=mode, base_name=name, ttl=ttl, capped=unique_for is not None)
