"""``cogworker run --burst``: when there is nothing left to do, so the worker can exit.

"Nothing left" means, seen twice in a row one look apart with no job fetched in between:

* every queue this worker reads that is not paused is empty (jobs on a paused queue, or on
  a queue it does not read, do not keep it running);
* no job of the schedule or retry set is due now (a retry in 30 s or a ``perform_in`` an
  hour ahead stays for a later run; a due one is first moved to its queue by the poller);
* this process holds no job: none prefetched, running, or between the two.

Should a fetch still be on its way back at that moment, the graceful stop that follows
hands its job back to the queue (as at any stop), so nothing is lost.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Final, Protocol

from cogworker.core.errors import BrokerError

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.launcher")

LOOK_INTERVAL: Final = 0.25  # seconds between two looks


class CountsWork(Protocol):
    def work_counts(self) -> tuple[int, int]: ...


class BurstWatch:
    """Decides, one look at a time, whether a ``--burst`` worker has finished."""

    def __init__(self, app: App, manager: CountsWork) -> None:
        self._app = app
        self._manager = manager
        self._taken_at_last_empty: int | None = None

    def finished(self) -> bool:
        """True on the second consecutive look that found nothing to do."""
        taken, in_hand = self._manager.work_counts()
        if in_hand or not self._nothing_stored():
            self._taken_at_last_empty = None
            return False
        done = self._taken_at_last_empty == taken
        self._taken_at_last_empty = taken
        return done

    def _nothing_stored(self) -> bool:
        broker = self._app.broker
        names = list(dict.fromkeys(self._app.settings.queues))
        now = time.time()
        try:
            waiting = sum(record.size for record in broker.queues.records(names)
                          if not record.paused)
            due = sum(broker.sets.size(name, max_score=now) for name in ("schedule", "retry"))
        except BrokerError as exc:
            logger.debug("burst: cannot look at the queues (%s); looking again", exc)
            return False
        return not waiting and not due
