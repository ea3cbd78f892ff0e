"""``cogworker run --watch``: run the worker as a child process and restart it whenever a
Python file under the working directory changes (development only).

Uses ``watchfiles`` (the optional ``cogworker[watch]`` extra). Each restart stops the
child as TERM does (running jobs get the shutdown timeout, unfinished ones go back to
their queues); Ctrl-C or TERM to the supervisor stops the child the same way and exits 0.
A child that exits by itself (say, a syntax error in the app) is started again at the next
change.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Final

from cogworker.cli.common import CogworkerUsageError

logger = logging.getLogger("cogworker.watch")

KILL_GRACE: Final = 5.0  # seconds past the shutdown timeout before a child is killed


def child_command(argv: Sequence[str]) -> list[str]:
    """``cogworker run ...`` as this interpreter runs it, without ``--watch``."""
    return [sys.executable, "-m", "cogworker", *(arg for arg in argv if arg != "--watch")]


def _stop(child: subprocess.Popen[bytes], timeout: float) -> None:
    if child.poll() is not None:
        return
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout + KILL_GRACE)
    except subprocess.TimeoutExpired:
        logger.warning("the worker did not stop within %.0fs; killing it", timeout + KILL_GRACE)
        child.kill()
        child.wait()


def _raise_interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def supervise(command: Sequence[str], directory: Path, stop_timeout: float) -> int:
    """Run ``command``, restart it on every change of a ``.py`` file under ``directory``
    until interrupted; returns the exit status (0)."""
    try:
        import watchfiles
    except ImportError as exc:
        raise CogworkerUsageError(
            "--watch needs the watchfiles package: pip install 'cogworker[watch]'") from exc
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    logger.info("watching %s for changes to .py files; the worker restarts on each", directory)
    child = subprocess.Popen(list(command))
    try:
        for changes in watchfiles.watch(directory, watch_filter=watchfiles.PythonFilter(),
                                        raise_interrupt=False):
            changed = sorted({Path(path).name for _change, path in changes})
            logger.info("changed: %s; restarting the worker", ", ".join(changed))
            _stop(child, stop_timeout)
            child = subprocess.Popen(list(command))
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        _stop(child, stop_timeout)
    logger.info("stopped watching")
    return 0
