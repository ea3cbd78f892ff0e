#!/usr/bin/env bash
# Sourced by scripts/check, scripts/example and scripts/compat-smoke: makes ./.venv with
# cogworker installed, with hiredis and the newest redis-py (the main leg of the matrix; the
# other legs' virtualenvs, without hiredis or with older pins, are made by scripts/legs.py).
#
# Needs only a Python >= 3.10: $PYTHON if set, else python3 (or python3.13 ... python3.10).
# The virtualenv is created when missing and reinstalled when pyproject.toml changes.
step() { printf '==> %s\n' "$*"; }
die() { printf 'scripts/check: %s\n' "$*" >&2; exit 1; }

is_python_310() {
    command -v "$1" >/dev/null 2>&1 \
        && "$1" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1
}

find_python() {
    if [[ -n "${PYTHON:-}" ]]; then
        is_python_310 "$PYTHON" || die "PYTHON=$PYTHON is not a Python 3.10 or newer"
        echo "$PYTHON"
        return
    fi
    local candidate
    for candidate in python3 python3.13 python3.12 python3.11 python3.10; do
        if is_python_310 "$candidate"; then
            echo "$candidate"
            return
        fi
    done
    die "no Python 3.10 or newer found: install one, or set PYTHON to its path"
}

venv_python=.venv/bin/python
if [[ ! -x "$venv_python" ]]; then
    python=$(find_python)
    step "create .venv with $("$python" --version 2>&1)"
    "$python" -m venv .venv
    "$venv_python" -m pip install --quiet --upgrade pip
fi

# Reinstall when pyproject.toml or the interpreter changed since the last install.
stamp_file=.venv/.cogworker-install-stamp
stamp=$("$venv_python" -c '
import hashlib, pathlib, sys
digest = hashlib.sha256(pathlib.Path("pyproject.toml").read_bytes())
digest.update(sys.version.encode())
print(digest.hexdigest())')
if [[ "$(cat "$stamp_file" 2>/dev/null || true)" != "$stamp" ]]; then
    step "pip install -e '.[dev,embedded,hiredis]'"
    # --no-compile: .pyc files only for the modules that get imported, when they are
    "$venv_python" -m pip install --quiet --disable-pip-version-check --no-compile \
        -e '.[dev,embedded,hiredis]'
    echo "$stamp" >"$stamp_file"
fi

# The third-party plugin distributions under examples/ (scripts/example_plugins.py), installed
# from their own folders as their users would: pip install ./examples/cogworker-streams.
"$venv_python" scripts/example_plugins.py ensure "$venv_python"
