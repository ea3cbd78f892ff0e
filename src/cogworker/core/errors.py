"""Every error cogworker raises on purpose.

The tree::

    CogworkerError                      root: catch this to catch everything of ours
    ├── ConfigurationError              a setting is invalid (names the field, value, accepted)
    ├── JobArgumentError                a job argument cannot be stored as JSON (at enqueue)
    │   ├── JobArgumentShapeError       ... nested too deep, or a string with a lone surrogate
    │   └── JobCallError                the arguments do not fit the job's parameters
    ├── JobDefinitionError              a job is declared wrongly (bad option, duplicate name)
    ├── PeriodicEntryError              a cron entry is invalid (names the entry and the problem)
    ├── UnknownPeriodicEntryError       no cron entry (or several) match a pjid or prefix
    ├── UnknownJobError                 a stored job name resolves to no registered job
    ├── NoCurrentJobError               current_job() called outside a job's run
    ├── PayloadError                    bytes from Redis are not a job payload
    ├── PluginError
    │   ├── PluginNotFoundError         an activated name is not installed
    │   ├── PluginConflictError         a name claimed twice, or two exclusive impls
    │   └── PluginLoadError             a plugin failed to import
    ├── BrokerError                     the broker failed; ``__cause__`` keeps the driver error
    │   ├── BrokerUnavailableError      connection lost, Redis loading/readonly/busy: retry later
    │   │   └── NoRedisError            no Redis URL set and no private redis-server running
    │   ├── BrokerAuthenticationError   Redis refused the user name or password
    │   ├── BrokerPermissionError       the Redis user's ACL refuses a command, key or channel
    │   ├── UnsupportedCommandError     the server lacks a command (e.g. LMOVE before 6.2)
    │   └── BrokerFullError             the store is out of memory (maxmemory, noeviction)
    ├── EmbeddedRedisError              the private redis-server could not be found or started
    ├── TransactionBinderError          on-commit enqueue: no integration installed, or bad using=
    ├── DependencyError                 an installed library (redis-py) is one cogworker can't use
    └── TestingError
        └── EmptyQueueError             fake mode: nothing recorded for that job

Control flow, not failures, and so not under the root:

    JobFailedError(CogworkerError)      handed to death handlers for a failure filed later
    JobOrphanedError(CogworkerError)    handed to death handlers for a repeat orphan
    JobTimeoutError(CogworkerError)     raised in a job that ran past its time limit
    JobCancelled(CogworkerError)        a cancelled job's run: settled as cancelled
    OverLimit(CogworkerError)           a limiter is full: the worker reschedules the job

Messages say what went wrong, which thing it was, and what to do about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def indefinite(noun: str) -> str:
    """The noun with its indefinite article: ``"an int"``, ``"a str"``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


class CogworkerError(Exception):
    """Root of every error cogworker raises on purpose."""


class ConfigurationError(CogworkerError, ValueError):
    """A setting has a value cogworker cannot use."""

    def __init__(self, field: str, value: object, accepted: str, source: str | None = None):
        self.field = field
        self.value = value
        self.accepted = accepted
        self.source = source
        where = f" (from {source})" if source else ""
        super().__init__(
            f"setting {field!r} has an invalid value {value!r}{where}: "
            f"expected {accepted}"
        )


class JobArgumentError(CogworkerError, TypeError):
    """A job argument cannot be stored: arguments must be plain JSON."""

    def __init__(self, job: str, position: str, value: object, hint: str):
        self.job = job
        self.position = position
        self.value = value
        super().__init__(
            f"argument {position} of job {job!r} is {indefinite(type(value).__name__)} "
            f"({value!r:.80}), which is not JSON: {hint}"
        )


class JobDefinitionError(CogworkerError, TypeError):
    """A job was declared in a way cogworker cannot use."""


class PeriodicEntryError(CogworkerError, ValueError):
    """A cron entry cannot be registered: its expression, job or options are wrong."""

    def __init__(self, cron: object, job: object, reason: str):
        self.cron = cron
        self.job = job
        self.reason = reason
        which = f"periodic entry {cron!r} for job {job!r}" if cron or job else "a periodic entry"
        super().__init__(
            f"{which} is invalid: {reason}. Fix the entry (in app.periodic(...) or in the "
            "config file's plugin_options.periodic.entries)"
        )


class UnknownPeriodicEntryError(CogworkerError, LookupError):
    """No published or registered cron entry matches a pjid (or prefix), or several do."""


class UnknownJobError(CogworkerError, LookupError):
    """A payload names a job this process does not know."""

    def __init__(self, name: str, known: Iterable[str] = ()):
        self.name = name
        known_list = sorted(known)
        shown = ", ".join(known_list[:10]) or "none"
        super().__init__(
            f"no job named {name!r} is registered in this app (registered: {shown}); "
            "import the module that defines it in the app, or give the job name= to match"
        )


class NoCurrentJobError(CogworkerError, LookupError):
    """:func:`cogworker.current_job` was called outside a job a worker (or a test mode) runs."""


class PayloadError(CogworkerError, ValueError):
    """Bytes read from the broker are not a job payload."""

    def __init__(self, reason: str, raw: bytes | str):
        self.reason = reason
        self.raw = raw
        super().__init__(reason)


class PluginError(CogworkerError):
    """Base of plugin discovery and activation errors."""


class PluginNotFoundError(PluginError, LookupError):
    """An activated plugin name is not installed."""

    def __init__(self, name: str, installed: Iterable[str], suggestion: str | None,
                 source: str | None = None):
        self.name = name
        self.installed = sorted(installed)
        self.suggestion = suggestion
        self.source = source
        hint = f" Did you mean {suggestion!r}?" if suggestion else ""
        where = f" (named by {source})" if source else ""
        super().__init__(
            f"no cogworker plugin named {name!r} is installed{where}.{hint} "
            f"Installed plugins: {', '.join(self.installed) or 'none'}. "
            "Install the package that provides it, or fix the name."
        )


class PluginConflictError(PluginError):
    """Two plugins claim the same name or the same exclusive slot."""


class PluginLoadError(PluginError, ImportError):
    """A plugin's module failed to import."""

    def __init__(self, name: str, distribution: str, cause: BaseException):
        super().__init__(
            f"cogworker plugin {name!r} from distribution {distribution!r} failed to load: "
            f"{type(cause).__name__}: {cause}. Fix or reinstall that package, or deactivate "
            f"it with --plugin no:{name}."
        )
        # Set after ImportError.__init__, which resets ``name`` to None.
        self.name = name
        self.distribution = distribution


class BrokerError(CogworkerError):
    """The broker failed. ``__cause__`` holds the driver's own exception."""


class BrokerUnavailableError(BrokerError, ConnectionError):
    """The broker cannot be reached right now (connection, LOADING, READONLY, BUSY...)."""


class NoRedisError(BrokerUnavailableError):
    """A command that never starts a redis-server found no Redis to talk to: no URL is set
    and the project's private redis-server is not running."""


class BrokerAuthenticationError(BrokerError, PermissionError):
    """Redis refused to authenticate: a wrong password or user name, or none given where
    one is required. Retrying does not help; the URL (or its password) must change."""


class BrokerPermissionError(BrokerError, PermissionError):
    """The Redis user's ACL refuses a command, a key or a pub/sub channel (NOPERM)."""


class UnsupportedCommandError(BrokerError):
    """The broker rejected a command as unknown (for example LMOVE before Redis 6.2)."""


class BrokerFullError(BrokerError):
    """The store is out of memory and refuses commands that would grow it (Redis:
    ``maxmemory`` reached with the ``noeviction`` policy). Pushes fail until it has room;
    the steps that settle and take jobs still go through, since they free what they fill."""


class EmbeddedRedisError(CogworkerError, RuntimeError):
    """The private redis-server could not be found or started."""


class TransactionBinderError(CogworkerError, RuntimeError):
    """``perform_on_commit`` cannot tie the push to a transaction: no framework integration
    (``cogworker.contrib.django``, ``cogworker.contrib.sqlalchemy``) is installed, or
    ``using=`` names nothing that integration knows."""


class DependencyError(CogworkerError, RuntimeError):
    """An installed library is a version cogworker cannot work with (names it, and what to
    install instead)."""


class TestingError(CogworkerError):
    """Misuse of the testing helpers."""

    __test__ = False  # not a pytest test class


class EmptyQueueError(TestingError, LookupError):
    """Fake mode: no job of that name was recorded."""


class JobFailedError(CogworkerError):
    """Stands in for a job's exception when its failure was filed after the fact."""


class JobOrphanedError(CogworkerError):
    """A job killed its process too many times and was moved to dead."""


class JobTimeoutError(CogworkerError):
    """A job ran past its time limit (the ``time_limit`` option or the ``job_time_limit``
    setting). Raised in the job (a sync job's thread, an ``async def`` job's task) and
    filed like any failure: retried, or dead when no retries are left."""


class JobCancelled(CogworkerError):
    """The job was cancelled (``app.cancel``, ``cogworker cancel``).

    Raised in a sync job's thread when it opted in (``cancel="raise"``) or when it calls
    ``job.raise_if_cancelled()``; the worker also raises it around a run that was signalled
    while running. A run that ends with it is settled as cancelled: acknowledged, never
    retried, never dead."""
class OverLimit(CogworkerError):
    """A limiter (``limits`` plugin) has no room for this job now.

    Raised by a declared limit before the job runs, or by ``with app.limiter...`` inside it.
    The worker puts the job back on the schedule with a back-off and jitter, without using
    a retry (``limit_reschedules`` in the payload counts these); after ``max_reschedules``
    of them it is a failure like any other (retry or dead).

    ``limiter`` names the limiter; ``retry_after`` is the limiter's own estimate of when
    room frees, in seconds (None: it has none); ``delay`` is how long the job waits before
    it runs again (the plugin's back-off with jitter; None: ``retry_after``, else 1 s);
    ``max_reschedules`` is how many reschedules a job may have before this is a failure.
    """

    RESCHEDULES_FIELD = "limit_reschedules"
    """The payload field counting a job's over-limit reschedules."""

    def __init__(self, limiter: str, retry_after: float | None = None,
                 delay: float | None = None, max_reschedules: int = 100) -> None:
        self.limiter = limiter
        self.retry_after = retry_after
        self.delay = delay
        self.max_reschedules = max_reschedules
        estimate = "" if retry_after is None else f"; room expected in {retry_after:.2f} s"
        super().__init__(f"limiter {limiter!r} is full{estimate}")

    def reschedules(self, job: Mapping[str, Any]) -> bool:
        """Whether ``job`` goes back on the schedule for this (True), or has had its
        ``max_reschedules`` and fails (False). Middleware that records runs asks this: a
        rescheduled job is no run, as for a declared limit."""
        count = job.get(self.RESCHEDULES_FIELD, 0)
        if not isinstance(count, int) or isinstance(count, bool):
            count = 0
        return count < self.max_reschedules

    def __reduce__(self) -> tuple[type[OverLimit], tuple[str, float | None, float | None, int]]:
        return (OverLimit, (self.limiter, self.retry_after, self.delay, self.max_reschedules))


class JobArgumentShapeError(JobArgumentError):
    """A job argument is made of JSON types but cannot travel: it nests deeper than a
    payload may, or a string holds a lone surrogate, which UTF-8 cannot encode."""

    def __init__(self, job: str, position: str, value: object, problem: str, hint: str):
        self.job = job
        self.position = position
        self.value = value
        # Not JobArgumentError.__init__: the repr of a deeply nested value can itself fail.
        super(JobArgumentError, self).__init__(
            f"argument {position} of job {job!r} {problem}: {hint}")


class JobCallError(JobArgumentError):
    """A job's arguments do not fit its parameters: one missing, one too many, an unknown
    keyword (raised at enqueue, where Python would raise ``TypeError`` at a call).

    ``signature`` is the job's parameters (``"(user_id, greeting='hi')"``), ``arguments``
    the call's arguments as shown in the message (also in ``value``; ``position`` is
    ``"call"``), ``problem`` what :meth:`inspect.Signature.bind` found.
    """

    def __init__(self, job: str, signature: str, arguments: str, problem: str):
        self.job = job
        self.position = "call"
        self.value = self.arguments = arguments
        self.signature = signature
        self.problem = problem
        super(JobArgumentError, self).__init__(
            f"job {job!r} takes {signature}, and {arguments} does not fit: {problem}")
