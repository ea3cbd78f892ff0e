"""Cold start: how long the first enqueue takes in a fresh process, per library.

For each library (cogworker once, whatever its fetch), ``runs`` fresh interpreters each run
``benchmarks/first_enqueue.py``, which times importing the job module, then making the
client and enqueueing one job, then a second enqueue. Interpreter start-up is left out;
one untimed run per library goes first, so that every timed run finds the bytecode cache
written, as a deployed application does (``PYTHONDONTWRITEBYTECODE`` is dropped from the
children's environment for that). The runs go round-robin between the libraries.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

from benchmarks.catalog import System
from benchmarks.environment import BenchEnvironment, child_environment

FIRST_ENQUEUE = Path(__file__).with_name("first_enqueue.py")
TIMINGS = ("import", "first_enqueue", "second_enqueue", "first_enqueue_cpu")


class ColdStartError(Exception):
    """A first-enqueue child failed; the message has its stderr."""


def libraries(systems: Sequence[System]) -> dict[str, System]:
    """One system per job module, named by its distribution (both cogworkers share one)."""
    chosen: dict[str, System] = {}
    for system in systems:
        if all(other.module != system.module for other in chosen.values()):
            chosen[system.distribution] = system
    return chosen


def measure(systems: Sequence[System], env: BenchEnvironment, python: str, runs: int,
            work_dir: Path, timeout: float) -> dict[str, dict[str, list[float]]]:
    """Seconds per library and timing (``TIMINGS``), one value per run."""
    child_env = child_environment(env.url, work_dir / "cold-start.counter")
    # The untimed first run must leave the bytecode caches behind, whatever this shell says.
    child_env.pop("PYTHONDONTWRITEBYTECODE", None)
    chosen = libraries(systems)
    timings: dict[str, dict[str, list[float]]] = {
        name: {timing: [] for timing in TIMINGS} for name in chosen}
    for number in range(runs + 1):  # run 0 writes the bytecode caches and is not kept
        for name, system in chosen.items():
            env.flush()
            figures = _first_enqueue(system, python, child_env, work_dir, timeout)
            if number == 0:
                continue
            for timing in TIMINGS:
                timings[name][timing].append(figures[timing])
    env.flush()
    return timings


def _first_enqueue(system: System, python: str, env: dict[str, str], work_dir: Path,
                   timeout: float) -> dict[str, float]:
    argv = [python, str(FIRST_ENQUEUE), system.module, "noop"]
    try:
        done = subprocess.run(argv, env=env, cwd=work_dir, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise ColdStartError(f"{system.distribution}: the first enqueue did not finish in "
                             f"{timeout:g}s") from None
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-10:])
        raise ColdStartError(f"{system.distribution}: first_enqueue.py exited "
                             f"{done.returncode}:\n{tail}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures
