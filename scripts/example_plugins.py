"""The third-party plugin distributions under ``examples/`` that the test venvs install.

    python scripts/example_plugins.py ensure PYTHON    (re)install them into PYTHON's venv

Each is installed from its own folder with ``pip install ./examples/<name>`` (not editable),
as its users would install it, after cogworker itself: ``--no-deps``, since its only
dependency is the cogworker already installed, and ``--force-reinstall``, since its version
does not change when its code does. :func:`ensure` reinstalls them when their files changed
since the venv's last install (a stamp in the venv); ``scripts/_venv.sh`` runs it for the
main venv and ``scripts/legs.py`` for each leg's. The tests that run them:
``tests/delivery/test_streams_*.py``. Standard library only.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_PLUGINS = (ROOT / "examples" / "cogworker-streams",)
STAMP_NAME = ".cogworker-example-plugins-stamp"
_SKIPPED_PARTS = {"__pycache__", ".mypy_cache", ".ruff_cache", "build", "dist"}


def digest() -> str:
    """A hash of every file of every example plugin (name and content)."""
    hashed = hashlib.sha256()
    for folder in EXAMPLE_PLUGINS:
        for path in sorted(folder.rglob("*")):
            parts = set(path.relative_to(folder).parts)
            if path.is_file() and not parts & _SKIPPED_PARTS and path.suffix != ".pyc" \
                    and not any(part.endswith(".egg-info") for part in parts):
                hashed.update(str(path.relative_to(ROOT)).encode())
                hashed.update(path.read_bytes())
    return hashed.hexdigest()


def ensure(python: Path) -> bool:
    """Install every example plugin into ``python``'s venv unless the venv's stamp says the
    same files are installed; True when it installed."""
    stamp = python.parent.parent / STAMP_NAME
    wanted = digest()
    if stamp.exists() and stamp.read_text(encoding="utf-8") == wanted:
        return False
    for folder in EXAMPLE_PLUGINS:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", "--no-deps", "--force-reinstall",
                        str(folder)], cwd=ROOT, check=True)
    stamp.write_text(wanted, encoding="utf-8")
    return True


def main(arguments: list[str]) -> int:
    if len(arguments) == 2 and arguments[0] == "ensure":
        if ensure(Path(arguments[1])):
            print("==> installed " + ", ".join(f"./{folder.relative_to(ROOT)}"
                                               for folder in EXAMPLE_PLUGINS), flush=True)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
