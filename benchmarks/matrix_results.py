"""What a matrix run found: every cell's runs, the cold starts, and the set-up they ran on."""

from __future__ import annotations

import platform
import shlex
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from benchmarks.context import commit_line, machine_line
from benchmarks.environment import BenchEnvironment
from benchmarks.report import SystemRuns


@dataclass(frozen=True)
class CellKey:
    """One cell of the matrix: which section, system, job, logging mode and process count."""

    section: str
    system: str
    job: str  # "incr" (one Redis round trip) or "noop"
    logging: str  # "default" (as shipped) or "quiet"
    workers: int = 1

    @property
    def label(self) -> str:
        suffix = f"-x{self.workers}" if self.workers > 1 else ""
        return f"{self.section}-{self.system}-{self.job}-{self.logging}{suffix}"


@dataclass
class Matrix:
    command: list[str]
    versions: dict[str, str]  # system name -> version of its distribution
    jobs: int
    runs: int
    delay_ms: float
    delay_jobs: int
    memory_jobs: int
    cold_starts: int
    cells: dict[CellKey, SystemRuns] = field(default_factory=dict)
    cold_start: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    supervisor: bool | None = None  # whether `cogworker run -P` existed (None: not asked)
    environment: list[str] = field(default_factory=list)  # header lines
    incr_cpu_us: float | None = None  # what one INCR costs a redis-py client here
    delay_round_trip_ms: float | None = None

    @property
    def failed(self) -> bool:
        return bool(self.errors) or any(entry.errors for entry in self.cells.values())

    def section(self, name: str, job: str | None = None,
                logging: str | None = None) -> list[tuple[CellKey, SystemRuns]]:
        return [(key, entry) for key, entry in self.cells.items()
                if key.section == name and job in (None, key.job)
                and logging in (None, key.logging)]

    def describe_environment(self, env: BenchEnvironment, python: str) -> None:
        """Record the header lines (and the INCR's own cost) from the direct environment."""
        self.incr_cpu_us = env.incr_cpu_us()
        hiredis = _version("hiredis")
        self.environment = [
            f"Command: `{shlex.join(self.command)}`",
            commit_line(),
            machine_line(),
            f"Python {platform.python_version()} ({python}), Redis {env.redis_version()}, "
            f"redis-py {metadata.version('redis')}, hiredis {hiredis}",
            f"N = {self.jobs:,} jobs per run ({self.delay_jobs:,} behind the delay, "
            f"{self.memory_jobs:,} in the memory run), {self.runs} run(s) per cell; PING "
            f"round trip {env.round_trip_ms():.3f} ms (median); one INCR costs a redis-py "
            f"client {self.incr_cpu_us:.0f} µs of CPU here (a loop of 2,000)",
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "header": self.environment, "incr_cpu_us": self.incr_cpu_us,
            "delay_ms": self.delay_ms, "delay_round_trip_ms": self.delay_round_trip_ms,
            "supervisor": self.supervisor, "errors": self.errors,
            "cells": [{**key.__dict__, "version": entry.version,
                       "setup": entry.system.setup, "metrics": entry.metrics,
                       "commands": entry.commands, "errors": entry.errors}
                      for key, entry in self.cells.items()],
            "cold_start_seconds": self.cold_start,
        }


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"
