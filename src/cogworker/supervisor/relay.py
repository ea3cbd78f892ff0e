"""The supervisor's OS signals, turned into tokens for its loop.

As in :mod:`cogworker.worker.signals`, a handler only puts a token on a
:class:`queue.SimpleQueue` (safe from a signal handler); the loop acts on it. SIGCHLD only
wakes the loop, so a dead child is reaped (and its jobs recovered) at once instead of at
the next tick.

=========  ===========  ==========================================================
signal     token        what the supervisor does
=========  ===========  ==========================================================
TERM, INT  ``stop``     TERM to every child, SIGKILL to those alive after the grace
TSTP       ``quiet``    relayed: every child stops fetching, running jobs finish
USR2       ``restart``  phased restart: one child at a time
CHLD       ``child``    reap now
=========  ===========  ==========================================================
"""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Final

STOP: Final = "stop"
QUIET: Final = "quiet"
RESTART: Final = "restart"
CHILD: Final = "child"

Tokens = queue.SimpleQueue[str]
_WANTED: Final = {"SIGTERM": STOP, "SIGINT": STOP, "SIGTSTP": QUIET, "SIGUSR2": RESTART,
                  "SIGCHLD": CHILD}


@dataclass
class Installed:
    """The handlers that were in place before :func:`install`; :meth:`restore` reinstates."""

    previous: dict[signal.Signals, Any] = field(default_factory=dict)

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous.clear()


def install(tokens: Tokens) -> Installed:
    """Route the supervisor's signals to ``tokens`` (main thread only; elsewhere nothing
    is installed and the supervisor is steered through ``tokens`` alone)."""
    installed = Installed()
    if threading.current_thread() is not threading.main_thread():
        return installed
    available = signal.Signals.__members__
    for name, token in _WANTED.items():
        if name in available:
            signum = available[name]
            installed.previous[signum] = signal.signal(signum, _handler(tokens, token))
    return installed


def _handler(tokens: Tokens, token: str) -> Callable[[int, FrameType | None], None]:
    def handle(signum: int, frame: FrameType | None) -> None:
        tokens.put(token)

    return handle
