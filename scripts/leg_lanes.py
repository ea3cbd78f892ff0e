"""Running the legs of ``scripts/legs.py`` side by side, each leg's output kept in one piece.

A *lane* is a sequence of legs run one after the other; the lanes run at the same time, one
thread each (a leg's work is subprocesses, so the threads only wait on them). While several
legs run, each leg's output goes to its :class:`LegLog` and is printed whole, under a header,
the moment the leg ends: concurrent legs never interleave their lines, and a failing leg's
output reads exactly as if it had run alone. When a single leg runs, its output streams live.
Standard library only.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

_print_lock = threading.Lock()
_started = time.monotonic()


def say(message: str) -> None:
    """One line of the runner's own progress, never in the middle of a leg's output."""
    with _print_lock:
        print(message, flush=True)


class LegLog:
    """What one leg prints: streamed at once, or held and printed whole by :meth:`release`."""

    def __init__(self, name: str, *, stream: bool) -> None:
        self.name = name
        self.stream = stream
        self._held: list[str] = []

    def write(self, text: str) -> None:
        """``text`` as it is (lines from a subprocess keep their own newlines)."""
        if self.stream:
            with _print_lock:
                print(text, end="", flush=True)
        else:
            self._held.append(text)

    def line(self, text: str) -> None:
        self.write(text + "\n")

    def step(self, message: str) -> None:
        self.line(f"==> {message}")

    def held(self) -> str:
        """Everything written so far and not printed (all of it, unless streaming)."""
        return "".join(self._held)

    def release(self, verdict: str) -> None:
        """Print the held output under a header naming the leg and how it ended."""
        if self.stream:
            return
        with _print_lock:
            print(f"==> leg {self.name} {verdict} (+{elapsed()}): its whole output follows",
                  flush=True)
            print("".join(self._held), end="", flush=True)
            print(f"==> end of leg {self.name}", flush=True)
        self._held.clear()


class Job(Protocol):
    @property
    def name(self) -> str: ...


JobT = TypeVar("JobT", bound=Job)
ResultT = TypeVar("ResultT")


def run_lanes(lanes: Sequence[Sequence[JobT]],
              run: Callable[[JobT, LegLog], ResultT],
              verdict: Callable[[ResultT], str]) -> dict[str, ResultT]:
    """Run every lane at once, each lane's legs in order; the results by leg name.

    ``run(leg, log)`` does one leg, writing to ``log``; ``verdict(result)`` names how it
    ended ("passed", "failed", ...) for the header of its output. An exception escaping
    ``run`` is a bug of the runner: it is printed in full and re-raised once all lanes end.
    """
    busy = [lane for lane in lanes if lane]
    stream = sum(len(lane) for lane in busy) == 1
    results: dict[str, ResultT] = {}
    crashes: list[BaseException] = []

    def drive(lane: Sequence[JobT]) -> None:
        for leg in lane:
            log = LegLog(leg.name, stream=stream)
            if not stream:
                say(f"==> leg {leg.name} started (+{elapsed()})")
            try:
                results[leg.name] = outcome = run(leg, log)
            except BaseException as crash:
                log.line(traceback.format_exc())
                log.release("crashed")
                crashes.append(crash)
                return
            log.release(verdict(outcome))

    threads = [threading.Thread(target=drive, args=(lane,), name=f"lane-{lane[0].name}")
               for lane in busy]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if crashes:
        raise crashes[0]
    return results


def elapsed() -> str:
    seconds = time.monotonic() - _started
    return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
