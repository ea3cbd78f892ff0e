"""The ``attempts`` built-in plugin: the failure trail of every job that failed at least once.

Each failed attempt appends ``{attempt, failed_at, outcome, error_class, error_message}``
to the job's trail (the newest ``plugin_options.attempts.keep`` = 25 kept, for
``plugin_options.attempts.ttl`` = 30 days after the last failure), read oldest first by
``app.attempts(jid)`` and ``cogworker retry|dead show``. One write per *failure*, when it is
filed: failures are rare, so this is not on a successful job's path. Deleting a job from
retry or dead through the API drops its trail (``cogworker_jobs_deleted``). Best-effort:
a failed write is reported by the outage log and never touches the job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogworker.core.broker import ATTEMPTS, Attempt, AttemptOutcome, AttemptStore
from cogworker.core.broker.attempts import TRAIL_LIMIT, TRAIL_TTL
from cogworker.core.errors import ConfigurationError, JobOrphanedError
from cogworker.core.markers import hookimpl
from cogworker.core.outage import OutageLog
from cogworker.core.payload import MANUAL_RETRY, max_retries

if TYPE_CHECKING:
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

PLUGIN_NAME = "attempts"
OPTION_NAMES = ("keep", "ttl")
TRAIL_SOURCES = frozenset({"retry", "dead"})
_outages = OutageLog()


@dataclass(frozen=True, slots=True)
class AttemptsOptions:
    """``plugin_options["attempts"]``: ``keep`` entries per trail, ``ttl`` seconds."""

    keep: int = TRAIL_LIMIT
    ttl: float = TRAIL_TTL

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> AttemptsOptions:
        unknown = sorted(set(raw) - set(OPTION_NAMES))
        if unknown:
            raise ConfigurationError(f"plugin_options.attempts.{unknown[0]}", raw[unknown[0]],
                                     "a known option of the attempts plugin: keep, ttl")
        keep = raw.get("keep", TRAIL_LIMIT)
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ConfigurationError("plugin_options.attempts.keep", keep,
                                     "a whole number >= 1 (entries kept per job)")
        ttl = raw.get("ttl", TRAIL_TTL)
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
            raise ConfigurationError("plugin_options.attempts.ttl", ttl,
                                     "a number of seconds > 0 (how long a trail is kept)")
        return cls(keep=keep, ttl=float(ttl))


def options_of(app: PluginHost) -> AttemptsOptions:
    options = app.extras.get(PLUGIN_NAME)
    return options if isinstance(options, AttemptsOptions) else AttemptsOptions()


def store_of(app: PluginHost) -> AttemptStore | None:
    """The broker's ATTEMPTS facet; None (said once, in a warning) when it has none."""
    store = app.broker.extension(ATTEMPTS)
    if store is None and not app.extras.get(f"{PLUGIN_NAME}.warned"):
        app.extras[f"{PLUGIN_NAME}.warned"] = True
        app.logger(PLUGIN_NAME).warning(
            "the %s broker keeps no failure trails (no %r facet): the attempts plugin stays "
            "idle", app.broker.name, ATTEMPTS.name)
    return store


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    app.extras[PLUGIN_NAME] = AttemptsOptions.parse(app.options(PLUGIN_NAME))


def _append(app: PluginHost, job: Payload, outcome: AttemptOutcome) -> None:
    store = store_of(app)
    if store is None:
        return
    count = job.get("retry_count")
    number = count if isinstance(count, int) and not isinstance(count, bool) else 1
    failed_at = job.get("failed_at")
    entry = Attempt(attempt=number,
                    failed_at=float(failed_at) if isinstance(failed_at, (int, float))
                    else app.clock(),
                    outcome=outcome, error_class=str(job.get("error_class") or ""),
                    error_message=str(job.get("error_message") or ""))
    options = options_of(app)
    try:
        store.append(str(job.get("jid")), entry, keep=options.keep, ttl=options.ttl)
    except Exception as exc:
        _outages.report(PLUGIN_NAME, exc)
    else:
        _outages.recovered(PLUGIN_NAME)


def death_outcome(job: Payload, exception: BaseException) -> AttemptOutcome:
    """``killed`` when the job died with retries left (its ``retry_in`` said so), else
    ``dead``."""
    if isinstance(exception, JobOrphanedError) or job.get(MANUAL_RETRY):
        return "dead"
    count = job.get("retry_count")
    failures = count if isinstance(count, int) and not isinstance(count, bool) else 1
    return "killed" if failures <= max_retries(job.get("retry")) else "dead"


@hookimpl
def cogworker_job_retried(app: PluginHost, job: Payload) -> None:
    _append(app, job, "retrying")


@hookimpl
def cogworker_job_died(app: PluginHost, job: Payload, exception: BaseException) -> None:
    _append(app, job, death_outcome(job, exception))


@hookimpl
def cogworker_job_discarded(app: PluginHost, job: Payload) -> None:
    _append(app, job, "discarded")


@hookimpl
def cogworker_jobs_deleted(app: PluginHost, jids: Sequence[str], source: str) -> None:
    if source not in TRAIL_SOURCES:
        return
    store = store_of(app)
    if store is None:
        return
    try:
        store.clear(jids)
    except Exception as exc:
        _outages.report(PLUGIN_NAME, exc)
