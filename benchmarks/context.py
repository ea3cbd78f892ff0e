"""What every benchmark report starts with: versions, machine, commit; and progress lines."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import psutil

from benchmarks.catalog import System
from benchmarks.environment import repository_root

RESULTS_DIR = repository_root() / "benchmarks" / ".results"


def progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def versions(systems: Sequence[System]) -> dict[str, str]:
    """Each system's installed version; exits with advice when one is not installed."""
    found = {}
    for system in systems:
        try:
            found[system.name] = metadata.version(system.distribution)
        except metadata.PackageNotFoundError:
            raise SystemExit(
                f"{system.distribution} is not installed, so {system.name} cannot run: use "
                "benchmarks/run (it installs the bench extra in a virtualenv of its own), "
                "pip install -e '.[bench]', or leave it out with --systems") from None
    return found


def machine_line() -> str:
    memory = psutil.virtual_memory().total / 2**30
    return (f"Machine: {_cpu_model()} ({platform.machine()}), {_cpu_count()} CPUs, "
            f"{memory:.0f} GiB RAM, {platform.system()} {platform.release()}; "
            f"load average {_load()} at the start")


def commit_line() -> str:
    """The commit measured, with ``+ uncommitted changes`` when the tree differs from it."""
    root = repository_root()
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "Commit: unknown (not a git checkout)"
    return f"Commit: {head}{' + uncommitted changes' if dirty.strip() else ''}"


def default_json_path(prefix: str) -> Path:
    return RESULTS_DIR / f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}.json"


def _load() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 0
