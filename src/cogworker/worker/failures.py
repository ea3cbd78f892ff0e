"""What happens to a job that failed: retry, dead or discard, how long to wait, and the
record stored for it (error fields and a capped backtrace).

The decision is pure (no I/O); :mod:`cogworker.worker.settlement` writes it.

The ``backtrace`` job option says how many lines of the traceback a retry or dead record
keeps in ``error_backtrace`` (Sidekiq 7's compressed form, :mod:`cogworker.core.backtrace`):
``True`` or absent (the default) keeps up to :data:`~cogworker.core.backtrace.MAX_LINES`,
an int N keeps the last N (at most that many), ``False`` or 0 keeps none. Unlike Sidekiq,
whose default is none, a failure can be traced to its line out of the box; the innermost
lines are kept, so a long stack loses its outer frames, never the one that raised.
"""

from __future__ import annotations

import copy
import enum
import logging
import math
import random
import time
from dataclasses import dataclass
from typing import Any, Literal

from cogworker.core import backtrace
from cogworker.core.callables import call_with_arity
from cogworker.core.job_definition import JobDefinition
from cogworker.core.payload import (
    MANUAL_RETRY,
    Payload,
    error_class,
    error_message,
    max_retries,
)

logger = logging.getLogger("cogworker.failures")

LONG_DELAY = 365 * 24 * 3600.0
MAX_INTERRUPTS = 3
INTERRUPT_DELAY = 30.0


class Outcome(enum.Enum):
    RETRY = "retry"
    DEAD = "dead"
    DISCARD = "discard"


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    delay: float = 0.0
    killed: bool = False  # the job's own retry_in hook said "kill"

    @property
    def cut_short(self) -> bool:
        return self.killed or self.outcome is Outcome.DISCARD


def default_backoff(count: int) -> float:
    """Seconds before retry number ``count`` (1-based): count⁴ + 15 + rand(30)·(count+1)."""
    return float(count**4 + 15 + random.randint(0, 29) * (count + 1))


def decide(definition: JobDefinition | None, job: Payload, exc: BaseException) -> Decision:
    """Decide a failure's fate. ``job["retry_count"]`` counts attempts before this one."""
    count = _int(job.get("retry_count"))
    if count + 1 > max_retries(job.get("retry")):
        return Decision(Outcome.DEAD)
    hook = definition.retry_in if definition is not None else None
    if hook is None:
        return Decision(Outcome.RETRY, default_backoff(count + 1))
    name = definition.name if definition else job.get("class")
    try:
        answer = call_with_arity(hook, count, exc, copy.deepcopy(job))
    except BaseException as hook_exc:  # the job's own code: whatever it raises
        logger.error("retry_in of %s raised %s: %s (using the default backoff)",
                     name, type(hook_exc).__name__, hook_exc)
        return Decision(Outcome.RETRY, default_backoff(count + 1))
    return _interpret(answer, name, count)


def _interpret(answer: Any, name: Any, count: int) -> Decision:
    if answer is None:
        return Decision(Outcome.RETRY, default_backoff(count + 1))
    if answer == "kill":
        return Decision(Outcome.DEAD, killed=True)
    if answer == "discard":
        return Decision(Outcome.DISCARD)
    if (isinstance(answer, (int, float)) and not isinstance(answer, bool)
            and math.isfinite(answer) and answer >= 0):
        if answer > LONG_DELAY:
            logger.warning("retry_in of %s returned %s seconds (over a year); using it", name,
                           answer)
        return Decision(Outcome.RETRY, float(answer))
    logger.warning("retry_in of %s returned %r; expected seconds >= 0, 'kill' or 'discard'; "
                   "using the default backoff", name, answer)
    return Decision(Outcome.RETRY, default_backoff(count + 1))


def backtrace_limit(option: Any) -> int:
    """How many traceback lines the ``backtrace`` job option asks a record to keep."""
    if option is False:
        return 0
    if isinstance(option, int) and not isinstance(option, bool):
        return min(max(option, 0), backtrace.MAX_LINES)
    return backtrace.MAX_LINES  # True, absent, or a value the option check let through


def _set_error(record: Payload, exc: BaseException) -> None:
    """The error fields of a failure record (the manual-retry mark is dropped: it
    describes one run, not the record)."""
    record.pop("failure_outcome", None)
    record.pop(MANUAL_RETRY, None)
    record["error_class"] = error_class(exc)
    record["error_message"] = error_message(exc)
    lines = backtrace.exception_lines(exc, backtrace_limit(record.get("backtrace")))
    if lines:
        record[backtrace.FIELD] = backtrace.compress_backtrace(lines)
    else:
        record.pop(backtrace.FIELD, None)


def failed_payload(job: Payload, exc: BaseException, now: float) -> Payload:
    """The payload to store after a failure: error fields and backtrace set,
    ``retry_count`` + 1."""
    stored = dict(job)
    _set_error(stored, exc)
    stored.setdefault("failed_at", now)
    stored["retry_count"] = _int(job.get("retry_count")) + 1
    return stored


@dataclass(frozen=True, slots=True)
class InterruptRecord:
    set_name: Literal["retry", "dead"]
    score: float
    payload: Payload
    reason: str


def interrupt_record(fetched: Payload, exc: BaseException, cut_short: bool,
                     now: float | None = None) -> InterruptRecord:
    """§5.7: the record for a failure whose normal write failed, built from the fetched job."""
    now = time.time() if now is None else now
    record = dict(fetched)
    _set_error(record, exc)
    interrupted = _int(fetched.get("interrupted_count")) + 1
    record["interrupted_count"] = interrupted
    record["retry_count"] = _int(fetched.get("retry_count")) + 1
    record["failed_at"] = now
    out_of_retries = record["retry_count"] > max_retries(fetched.get("retry"))
    if out_of_retries or cut_short:
        return InterruptRecord("dead", now, record, "no retries left")
    if interrupted > MAX_INTERRUPTS:
        return InterruptRecord("dead", now, record, f"interrupted more than {MAX_INTERRUPTS} times")
    delay = INTERRUPT_DELAY * interrupted
    return InterruptRecord("retry", now + delay, record,
                           f"retrying in {delay:.0f}s (interruption {interrupted} of at most "
                           f"{MAX_INTERRUPTS})")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
