"""Cron expressions: parsing (croniter + zoneinfo) and fire times that are right across DST.

Syntax: five fields (minute hour day-of-month month day-of-week), or six with a leading
seconds field; ``*``, lists, ranges, steps, month and day names; the aliases ``@yearly``,
``@annually``, ``@monthly``, ``@weekly``, ``@daily``, ``@midnight`` and ``@hourly``; and an
optional trailing IANA time zone (``0 9 * * * Europe/Berlin``). Without a zone the
expression is read in UTC, whatever the machine's local zone is, so every process of a
fleet computes the same slots.

How a zone is honoured: croniter walks *wall-clock* times (naive datetimes, no DST), and
each wall-clock time is then mapped to one instant:

* a wall-clock time that happens twice (the repeated hour when clocks go back) fires once,
  at its first occurrence;
* a wall-clock time that never happens (the skipped hour when clocks go forward) fires
  once, at the first instant after the gap (03:00 CEST for ``30 2 * * *`` in Berlin);
  several skipped times collapse into that one run.

A slot is the integer epoch second of that instant.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final
from zoneinfo import ZoneInfo

from croniter import CroniterError, croniter

if TYPE_CHECKING:
    from cogworker.core.periodic_types import PeriodicEntry

ALIASES: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
UTC: Final = dt.timezone.utc
# Area/Location names (Europe/Berlin, America/Argentina/Salta, Etc/GMT+1).
_ZONE_LIKE: Final = re.compile(r"^[A-Za-z_]+(?:/[A-Za-z0-9_+\-]+)+$")
_MAX_STEPS: Final = 10_000  # a guard only: real expressions need one or two steps
_MAX_SHIFT: Final = 6 * 3600  # no zone changes its offset twice within six hours


class CronExpressionError(ValueError):
    """A cron expression cannot be used; the message says why (no entry context)."""


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """A parsed expression: the croniter fields and the zone they are read in."""

    expression: str
    fields: str
    zone: dt.tzinfo
    with_seconds: bool

    @property
    def zone_name(self) -> str:
        return str(self.zone) if self.zone is not UTC else "UTC"


def _load_zone(name: str) -> dt.tzinfo | None:
    try:
        return ZoneInfo(name)
    except (ValueError, KeyError, OSError):
        return None


def _split_zone(tokens: list[str], expression: str) -> tuple[list[str], dt.tzinfo]:
    """Take a trailing time zone token off ``tokens`` when there is one."""
    is_alias = tokens[0].startswith("@")
    if (is_alias and len(tokens) == 1) or (not is_alias and len(tokens) <= 5):
        return tokens, UTC
    last = tokens[-1]
    zone = _load_zone(last)
    if zone is not None:
        return tokens[:-1], zone
    meant_as_zone = (
        is_alias
        or (len(tokens) > 6 and last[:1].isalpha())
        or (_ZONE_LIKE.match(last) is not None
            and not croniter.is_valid(" ".join(tokens), second_at_beginning=True))
    )
    if meant_as_zone:
        raise CronExpressionError(
            f"unknown time zone {last!r} in {expression!r}: use an IANA name such as "
            "Europe/Berlin or UTC"
        )
    return tokens, UTC


@functools.lru_cache(maxsize=1024)
def parse_cron(expression: str) -> CronSchedule:
    """Parse ``expression``; raises :class:`CronExpressionError` saying what is wrong."""
    if not isinstance(expression, str) or not expression.strip():
        raise CronExpressionError(f"the cron expression is empty ({expression!r})")
    tokens, zone = _split_zone(expression.split(), expression)
    if tokens[0].startswith("@"):
        if len(tokens) != 1 or tokens[0].lower() not in ALIASES:
            raise CronExpressionError(
                f"unknown cron alias {' '.join(tokens)!r}: use one of "
                f"{', '.join(sorted(ALIASES))}, optionally followed by a time zone"
            )
    elif len(tokens) not in (5, 6):
        raise CronExpressionError(
            f"{expression!r} has {len(tokens)} fields: use five (minute hour day month "
            "weekday), or six with a leading seconds field, optionally followed by a time zone"
        )
    fields = " ".join(tokens).lower() if tokens[0].startswith("@") else " ".join(tokens)
    try:
        croniter(fields, dt.datetime(2000, 1, 1), second_at_beginning=True)
    except CroniterError as exc:
        raise CronExpressionError(f"{expression!r} is not a valid cron expression: {exc}") from exc
    return CronSchedule(expression, fields, zone, with_seconds=len(tokens) == 6)


# wall clock <-> instants ---------------------------------------------------------------------


def _instant(naive: dt.datetime, zone: dt.tzinfo) -> int:
    """The epoch second a wall-clock time fires at (see the module docstring)."""
    if zone is UTC:
        return calendar.timegm(naive.timetuple())
    first = int(naive.replace(tzinfo=zone, fold=0).timestamp())
    if dt.datetime.fromtimestamp(first, zone).replace(tzinfo=None) == naive:
        return first  # exists (ambiguous times: fold=0 is the first occurrence)
    # In the gap: fold=0 reads it with the old offset (after the jump), fold=1 with the new
    # one (before the jump). The jump itself is the first instant whose wall clock is later.
    low, high = int(naive.replace(tzinfo=zone, fold=1).timestamp()), first
    while low < high:
        middle = (low + high) // 2
        if dt.datetime.fromtimestamp(middle, zone).replace(tzinfo=None) >= naive:
            high = middle
        else:
            low = middle + 1
    return low


def _latest_wall_time(now: int, zone: dt.tzinfo) -> dt.datetime:
    """The latest wall-clock time (naive) whose instant is ``<= now``.

    Usually the wall clock of ``now``. In a repeated hour's second pass the wall clock reads
    earlier than first-pass times that already fired, so it is the repeated range's last
    second instead (every time in that range fired, at its first occurrence, before now).
    """
    local = dt.datetime.fromtimestamp(now, zone)
    if not local.fold:
        return local.replace(tzinfo=None)
    low, high = now - _MAX_SHIFT, now  # find the jump back: the first second with fold=1
    while low < high:
        middle = (low + high) // 2
        if dt.datetime.fromtimestamp(middle, zone).fold:
            high = middle
        else:
            low = middle + 1
    return dt.datetime.fromtimestamp(low - 1, zone).replace(tzinfo=None)


def _schedule(entry_or_expression: PeriodicEntry | str) -> CronSchedule:
    if isinstance(entry_or_expression, str):
        return parse_cron(entry_or_expression)
    return parse_cron(entry_or_expression.cron)


def previous_fire(entry: PeriodicEntry | str, now: float) -> int:
    """The most recent slot at or before ``now`` (epoch seconds), as an integer."""
    schedule = _schedule(entry)
    base = math.floor(now)
    start = _latest_wall_time(base, schedule.zone) + dt.timedelta(seconds=1)
    walker = croniter(schedule.fields, start, second_at_beginning=True)
    try:
        for _ in range(_MAX_STEPS):
            slot = _instant(walker.get_prev(dt.datetime), schedule.zone)
            if slot <= base:
                return slot
    except CroniterError as exc:
        raise CronExpressionError(f"{schedule.expression!r} never fires: {exc}") from exc
    raise CronExpressionError(f"no fire time of {schedule.expression!r} found before {now}")


def next_fire(entry: PeriodicEntry | str, now: float) -> float:
    """The first fire time strictly after ``now`` (epoch seconds)."""
    schedule = _schedule(entry)
    start = _latest_wall_time(math.floor(now), schedule.zone)
    walker = croniter(schedule.fields, start, second_at_beginning=True)
    try:
        for _ in range(_MAX_STEPS):
            slot = _instant(walker.get_next(dt.datetime), schedule.zone)
            if slot > now:
                return float(slot)
    except CroniterError as exc:  # e.g. "0 0 31 2 *": the date never comes
        raise CronExpressionError(f"{schedule.expression!r} never fires: {exc}") from exc
    raise CronExpressionError(f"no fire time of {schedule.expression!r} found after {now}")
