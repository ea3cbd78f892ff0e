"""Pinning a worker process to one CPU at start-up (the ``cpu_affinity`` setting).

A worker process is one GIL: its threads never run Python in parallel, yet the kernel
spreads them over every CPU, and each GIL hand-off then wakes a thread on another CPU.
Pinning every thread to one CPU keeps the hand-offs on one core (see
``docs/how-to/deploy.md``, "Pin worker processes to CPUs", for when that helps and when it
hurts). Which CPU: :func:`cogworker.core.cpu_affinity.choose_cpu` for the process's slot.

On Linux ``os.sched_setaffinity`` sets the affinity of one thread, so every thread the
process already has (listed in ``/proc/self/task``: a log flusher, a client library's) is
pinned by id; threads started later inherit the affinity of the thread that starts them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Final

from cogworker.core import cpu_affinity
from cogworker.core.errors import ConfigurationError

if TYPE_CHECKING:
    from cogworker.core.settings import Settings

logger = logging.getLogger(__name__)

SETTING: Final = "cpu_affinity"
THREADS_DIR: Final = Path("/proc/self/task")


def planned_cpu(settings: Settings, slot: int,
                allowed: Collection[int] | None = None) -> int | None:
    """The CPU the process in ``slot`` is to be pinned to, None when ``cpu_affinity`` is
    off. ``allowed``: the CPUs the process may run on (default: what the OS says).

    Raises :class:`ConfigurationError` when this platform cannot pin (no
    ``os.sched_setaffinity``: not Linux) or when a listed CPU is outside ``allowed``.
    """
    affinity = cpu_affinity.parse(settings.cpu_affinity)
    if not affinity.enabled:
        return None
    source_name = settings.sources.get(SETTING)  # None: the default
    if not (hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")):
        raise ConfigurationError(
            SETTING, settings.cpu_affinity,
            f"off on this platform ({sys.platform}): pinning worker processes to CPUs "
            "needs Linux (os.sched_setaffinity); set cpu_affinity to off", source_name)
    usable = set(os.sched_getaffinity(0) if allowed is None else allowed)
    stray = cpu_affinity.outside(affinity, usable)
    if stray:
        which = (f"CPU {stray[0]} is" if len(stray) == 1
                 else f"CPUs {', '.join(map(str, stray))} are")
        raise ConfigurationError(
            SETTING, settings.cpu_affinity,
            f"only CPUs this process may run on ({cpu_affinity.cpu_ranges(usable)}); "
            f"{which} not among them: list only those, or use auto", source_name)
    return cpu_affinity.choose_cpu(affinity, slot, usable)


def pin_process(cpu: int, settings: Settings, slot: int) -> None:
    """Pin every thread of this process to ``cpu`` (what :func:`planned_cpu` chose for
    ``slot``) and log one INFO line saying which CPU and why."""
    threads = pin_threads(cpu)
    logger.info("pinned every thread to CPU %d (cpu_affinity=%s, slot %d; %d thread(s) "
                "now, later ones inherit it)", cpu, settings.cpu_affinity, slot, threads)


def pin_threads(cpu: int, threads_dir: Path = THREADS_DIR) -> int:
    """Pin the calling thread, then every other thread of the process, to ``cpu``; returns
    how many threads were pinned. The listing is read again until it holds no thread left
    unpinned, so a thread that an unpinned one started meanwhile is pinned too."""
    os.sched_setaffinity(0, {cpu})  # 0: the calling thread
    pinned = {threading.get_native_id()}
    while True:
        try:
            left = _thread_ids(threads_dir) - pinned
        except OSError as exc:
            logger.warning("cannot list this process's threads in %s (%s): only the "
                           "calling thread is pinned to CPU %d", threads_dir, exc, cpu)
            return len(pinned)
        if not left:
            return len(pinned)
        for thread_id in left:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.sched_setaffinity(thread_id, {cpu})
        pinned |= left


def _thread_ids(threads_dir: Path) -> set[int]:
    return {int(entry.name) for entry in threads_dir.iterdir() if entry.name.isdigit()}
