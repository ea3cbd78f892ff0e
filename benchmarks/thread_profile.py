"""Run ``cogworker`` under cProfile on every thread, and save the merged profile.

``python -m benchmarks.thread_profile OUT.pstats -- run -A module:app --burst ...`` runs the
CLI in this process with one :class:`cProfile.Profile` per thread (the processor threads,
the acker, the flush threads, the main thread), each timing with the thread's own CPU
clock (``time.thread_time``), then writes their merged statistics to ``OUT.pstats`` for
:mod:`pstats` and each thread's total to stderr (the worker's log). The kernel charges CPU
time by ticks, so a thread's figure is a sample, not a count: use ``--tool callgrind``
for exact instructions per thread. cProfile slows every Python call by a similar factor, so
read the profile for where the time goes, relative to the rest, not for absolute figures
(``benchmarks/run hot-path`` measures those without a profiler).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import threading
import time
from types import FrameType
from typing import Any

_profiles: list[tuple[str, cProfile.Profile]] = []
_lock = threading.Lock()


def _start_in_thread(frame: FrameType, event: str, arg: Any) -> None:
    """``threading.setprofile`` hook: the thread's first call swaps it for a profiler."""
    sys.setprofile(None)
    profile = cProfile.Profile(time.thread_time)
    with _lock:
        _profiles.append((threading.current_thread().name, profile))
    profile.enable()


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[2] != "--":
        sys.exit("usage: python -m benchmarks.thread_profile OUT.pstats -- CLI-ARGS...")
    out = sys.argv[1]
    sys.argv = ["cogworker", *sys.argv[3:]]
    from cogworker.cli import cli

    threading.setprofile(_start_in_thread)
    main_profile = cProfile.Profile(time.thread_time)
    main_profile.enable()
    try:
        cli.main(prog_name="cogworker", standalone_mode=False)
    finally:
        main_profile.disable()
        threading.setprofile(None)
        with _lock:
            others = list(_profiles)
        stats = pstats.Stats(main_profile)
        by_name: dict[str, float] = {}
        for name, profile in others:
            profile.create_stats()
            stats.add(profile)
            table = pstats.Stats(profile).stats  # type: ignore[attr-defined]
            own = sum(entry[2] for entry in table.values())
            family = name.rsplit("-", 1)[0] if name.startswith("cogworker-processor") else name
            by_name[family] = by_name.get(family, 0.0) + own
        stats.dump_stats(out)
        for name, seconds in sorted(by_name.items(), key=lambda item: -item[1]):
            print(f"thread {name}: {seconds:.3f} s of CPU (profiled)", file=sys.stderr)


if __name__ == "__main__":
    main()
