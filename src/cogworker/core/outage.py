"""Error reporting that stays readable while the broker is away.

While Redis is down every thread fails every second. :class:`OutageLog` logs the first
unavailability error of each *site* (``"fetch"``, ``"heartbeat"``...), then one summary at
most every ``summary_interval`` seconds, and one line when the site works again. An ACL
refusal repeats the same way (a thread retrying a channel its Redis user may not use), and
so does a full store (a write refused until it has room again): both are collapsed the same
way. Any other error is logged in full every time.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from cogworker.core.errors import BrokerFullError, BrokerPermissionError, BrokerUnavailableError

logger = logging.getLogger("cogworker.outage")

SUMMARY_INTERVAL = 60.0


@dataclass(slots=True)
class _Outage:
    started: float
    last_summary: float
    count: int = 1
    since_summary: int = 0
    latest: str = ""
    state: str = "unavailable"  # or "refused" (an ACL refusal), "full" (out of memory)


def _state_of(exc: BaseException) -> str | None:
    """How an outage of ``exc`` reads, or None for an error that is no outage."""
    if isinstance(exc, BrokerPermissionError):
        return "refused"
    if isinstance(exc, BrokerFullError):
        return "full"
    if isinstance(exc, BrokerUnavailableError):
        return "unavailable"
    return None


_RECOVERED = {"refused": "allows it", "full": "has room", "unavailable": "available"}


class OutageLog:
    def __init__(self, summary_interval: float = SUMMARY_INTERVAL,
                 log: logging.Logger = logger) -> None:
        self._interval = summary_interval
        self._log = log
        self._outages: dict[str, _Outage] = {}
        self._lock = threading.Lock()

    def report(self, site: str, exc: BaseException) -> None:
        """Log ``exc`` raised at ``site``, collapsing repeats of unavailability."""
        state = _state_of(exc)
        if state is None:
            self._log.error("%s: %s: %s", site, type(exc).__name__, exc, exc_info=exc)
            return
        now = time.monotonic()
        with self._lock:
            outage = self._outages.get(site)
            if outage is None:
                self._outages[site] = _Outage(started=now, last_summary=now, latest=str(exc),
                                              state=state)
                first = True
            else:
                first = False
                outage.count += 1
                outage.since_summary += 1
                outage.latest = str(exc)
                due = now - outage.last_summary >= self._interval
                if due:
                    repeats, outage.since_summary, outage.last_summary = (
                        outage.since_summary, 0, now)
        if first:
            self._log.error("%s: Redis %s: %s (repeats summarized every %ds)",
                            site, state, exc, int(self._interval))
        elif due:
            self._log.error("%s: still %s: %d more error(s) in the last %ds "
                            "(latest: %s)", site, state, repeats, int(self._interval), exc)

    def recovered(self, site: str) -> None:
        """The site worked: close its outage with one line, if it had one."""
        if site not in self._outages:
            return
        with self._lock:
            outage = self._outages.pop(site, None)
        if outage is not None:
            self._log.warning("%s: Redis %s again after %d error(s) over %.0fs", site,
                              _RECOVERED[outage.state],
                              outage.count, time.monotonic() - outage.started)

    def is_down(self, site: str) -> bool:
        return site in self._outages
