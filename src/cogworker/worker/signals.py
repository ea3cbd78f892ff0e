"""OS signals of a worker process, turned into tokens for the launcher's main thread.

Python runs signal handlers on the main thread between bytecodes, possibly while that very
thread is inside ``get`` on the token queue. So a handler does one thing only: put a token
on a :class:`queue.SimpleQueue`, whose ``put`` is documented as safe to call from a signal
handler (a :class:`queue.Queue` takes a non-reentrant lock and could deadlock there).

=========  ========  =====================================================
signal     token     what the launcher does
=========  ========  =====================================================
TERM, INT  ``stop``  graceful stop: drain up to the timeout, requeue, exit 0
TSTP       ``quiet`` stop fetching; running jobs finish
TTIN       ``dump``  log the stack of every thread at WARNING
=========  ========  =====================================================

TSTP and TTIN exist on POSIX only; on other systems they are simply not handled.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Final

logger = logging.getLogger(__name__)

STOP: Final = "stop"
QUIET: Final = "quiet"
DUMP: Final = "dump"

TokenQueue = queue.SimpleQueue[str]
"""What handlers (and remote control) put tokens on; the launcher's main thread reads it."""

Handler = Callable[[int, FrameType | None], Any] | int | None


def _signal_tokens() -> dict[signal.Signals, str]:
    wanted = {"SIGTERM": STOP, "SIGINT": STOP, "SIGTSTP": QUIET, "SIGTTIN": DUMP}
    available = signal.Signals.__members__
    return {available[name]: token for name, token in wanted.items() if name in available}


SIGNAL_TOKENS: Final[dict[signal.Signals, str]] = _signal_tokens()


@dataclass
class InstalledHandlers:
    """Handlers put in place by :func:`install`; :meth:`restore` puts the old ones back."""

    previous: dict[signal.Signals, Handler] = field(default_factory=dict)

    def restore(self) -> None:
        """Reinstate the handlers that were there before. Idempotent; main thread only."""
        if not self.previous:
            return
        if threading.current_thread() is not threading.main_thread():
            logger.warning("signal handlers can only be restored from the main thread; "
                           "left in place")
            return
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous.clear()


def install(tokens: TokenQueue) -> InstalledHandlers:
    """Route TERM/INT/TSTP/TTIN to ``tokens``; returns what is needed to undo it.

    Signal handlers can only be installed from the main thread. From any other thread (a
    launcher run inside a test's thread, say) nothing is installed: the launcher is then
    controlled through its token queue only.
    """
    installed = InstalledHandlers()
    if threading.current_thread() is not threading.main_thread():
        logger.debug("not on the main thread: OS signal handlers not installed")
        return installed

    for signum, token in SIGNAL_TOKENS.items():
        installed.previous[signum] = signal.signal(signum, _token_handler(tokens, token))
    return installed


def _token_handler(tokens: TokenQueue, token: str) -> Callable[[int, FrameType | None], None]:
    def handle(signum: int, frame: FrameType | None) -> None:
        tokens.put(token)

    return handle
