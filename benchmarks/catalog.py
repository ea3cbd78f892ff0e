"""The systems under test: how to start each one's worker, and where its jobs and client live.

The harness imports no queue library itself: the worker and client subprocesses import the
system's module (``benchmarks.systems.<name>_app``), so ``--systems`` can pick any subset of
what is installed.

Every worker runs with its library's defaults except the pool shape named in ``setup`` and,
in the ``quiet`` logging mode, the log level, which is then WARNING where the library has a
switch for it. In the ``default`` mode each worker logs as it ships (``logging`` says what
that is), to its stdout and stderr, which the harness sends to a file in the run's work
folder as a service manager would send them to a file or journald.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

JOB_KINDS = ("incr", "noop")  # incr: one Redis round trip, then the record; noop: the record
LOGGING_MODES = ("default", "quiet")


class QueueClient(Protocol):
    """The enqueue side of one system, as the client subprocess drives it."""

    def push_each(self, arguments: Sequence[float]) -> None:
        """Enqueue one job per argument, one call (and round trip) each, in order."""

    def push_bulk(self, arguments: Sequence[int]) -> None:
        """Enqueue many at once (only called when the system's ``bulk`` is true)."""

    def push_paced(self, count: int, interval: float) -> None:
        """Enqueue ``count`` jobs ``interval`` seconds apart, each given its enqueue time."""

    def close(self) -> None:
        """Release connections."""


WorkerArgs = Callable[[str, str], list[str]]  # (python executable, logging mode) -> argv


@dataclass(frozen=True)
class System:
    name: str
    distribution: str  # for the version shown in the report
    setup: str  # the pool shape, as shown in the report
    module: str  # the module holding the jobs and ``make_client(job)``
    worker_args: WorkerArgs
    bulk: bool  # whether the library has a bulk enqueue
    logging: str  # what the ``default`` logging mode is, for the report

    def worker_command(self, python: str, logging: str = "quiet") -> list[str]:
        if logging not in LOGGING_MODES:
            raise ValueError(f"logging mode {logging!r}: choose from {', '.join(LOGGING_MODES)}")
        return self.worker_args(python, logging)


def _cogworker(*extra: str) -> WorkerArgs:
    def argv(python: str, logging: str) -> list[str]:
        level = ["--log-level", "WARNING"] if logging == "quiet" else []
        return [python, "-m", "cogworker", "run", "-A",
                "benchmarks.systems.cogworker_app:app", "-c", "10", *level, *extra]

    return argv


def _rq(python: str, logging: str) -> list[str]:
    level = ["--logging_level", "WARNING"] if logging == "quiet" else []
    return [python, "-m", "rq.cli", "worker", "--worker-class", "rq.worker.SimpleWorker",
            "--path", ".", *level, "--config", "benchmarks.systems.rq_app", "bench"]


def _dramatiq(python: str, logging: str) -> list[str]:
    # No level switch (only -v for more); at its INFO default it logs nothing per message.
    return [python, "-m", "dramatiq", "benchmarks.systems.dramatiq_app",
            "--processes", "1", "--threads", "8"]


def _celery(python: str, logging: str) -> list[str]:
    # WARNING is also the worker's default --loglevel: both modes are the same command.
    return [python, "-m", "celery", "-A", "benchmarks.systems.celery_app", "worker",
            "--pool", "threads", "--concurrency", "8", "--loglevel", "WARNING"]


def _arq(python: str, logging: str) -> list[str]:
    return [python, "-m", "benchmarks.systems.arq_app", logging]


def _huey(python: str, logging: str) -> list[str]:
    quiet = ["--quiet"] if logging == "quiet" else []
    return [python, "-m", "huey.bin.huey_consumer", "benchmarks.systems.huey_app.huey",
            "--workers", "8", "--worker-type", "thread", *quiet]


_COGWORKER_LOGGING = "INFO, text: a start and a done line per job"

SYSTEMS: dict[str, System] = {
    system.name: system
    for system in (
        System("cogworker-reliable", "cogworker", "reliable fetch, 10 threads",
               "benchmarks.systems.cogworker_app", _cogworker(), bulk=True,
               logging=_COGWORKER_LOGGING),
        System("cogworker-basic", "cogworker", "basic fetch, 10 threads",
               "benchmarks.systems.cogworker_app", _cogworker("--plugin", "basic"),
               bulk=True, logging=_COGWORKER_LOGGING),
        System("rq", "rq", "SimpleWorker", "benchmarks.systems.rq_app", _rq, bulk=True,
               logging="INFO: the job, 'Job OK' and the result's TTL per job"),
        System("dramatiq", "dramatiq", "1 process, 8 threads",
               "benchmarks.systems.dramatiq_app", _dramatiq, bulk=False,
               logging="INFO: nothing per message; no switch, so quiet is the same"),
        System("celery", "celery", "threads pool, 8", "benchmarks.systems.celery_app",
               _celery, bulk=False,
               logging="WARNING (the worker's default): nothing per task, as quiet"),
        System("arq", "arq", "asyncio, max_jobs 10 (default)", "benchmarks.systems.arq_app",
               _arq, bulk=False, logging="INFO (the arq command's): a start and an end "
                                         "line per job"),
        System("huey", "huey", "8 threads", "benchmarks.systems.huey_app", _huey,
               bulk=False, logging="INFO: 'Executing' and 'executed in' per task"),
    )
}
BASELINE = "cogworker-reliable"
PINNED_SUFFIX = "-pinned"
PINNED_COGWORKER = "cogworker" + PINNED_SUFFIX


def _pinned(peer: WorkerArgs) -> WorkerArgs:
    """A peer's worker under ``taskset -c 0``: the peers have no setting of their own."""
    def argv(python: str, logging: str) -> list[str]:
        return ["taskset", "-c", "0", *peer(python, logging)]

    return argv


PINNED: dict[str, System] = {
    system.name: system
    for system in (
        System(PINNED_COGWORKER, "cogworker", "reliable fetch, 10 threads, "
               "--cpu-affinity auto (CPU 0)", "benchmarks.systems.cogworker_app",
               _cogworker("--cpu-affinity", "auto"), bulk=True, logging=_COGWORKER_LOGGING),
        System("dramatiq-pinned", "dramatiq", "1 process, 8 threads, taskset -c 0",
               "benchmarks.systems.dramatiq_app", _pinned(_dramatiq), bulk=False,
               logging=SYSTEMS["dramatiq"].logging),
        System("huey-pinned", "huey", "8 threads, taskset -c 0", "benchmarks.systems.huey_app",
               _pinned(_huey), bulk=False, logging=SYSTEMS["huey"].logging),
    )
}
"""Each worker process pinned to one CPU (opt-in for cogworker, ``taskset`` for a peer):
not in the default selection; name them in ``--systems``."""
ALL_SYSTEMS: dict[str, System] = {**SYSTEMS, **PINNED}


def is_peer(name: str, pinned: bool = False) -> bool:
    """Whether system ``name`` is a peer (not cogworker), at its defaults or (``pinned``)
    pinned to one CPU: targets compare cogworker with the peers at their defaults."""
    return not name.startswith("cogworker") and name.endswith(PINNED_SUFFIX) == pinned


def select_systems(text: str) -> list[System]:
    """The systems named in a comma-separated list; ValueError naming the unknown ones."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ALL_SYSTEMS]
    if unknown or not names:
        raise ValueError(f"unknown {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(ALL_SYSTEMS)}")
    return [ALL_SYSTEMS[name] for name in names]
