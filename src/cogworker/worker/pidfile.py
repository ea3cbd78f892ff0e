"""``cogworker run --pidfile PATH``: the worker's pid in a file, for probes and init scripts.

Written atomically (a temporary file renamed over the path), so a reader never sees half a
pid; removed at exit only while it still names this process, so a newer worker that took
the same path keeps its file. A process killed with SIGKILL leaves the file behind: that is
how ``cogworker health --pidfile`` tells "not running" from "never started".
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)


class PidfileError(OSError):
    """The pidfile cannot be written (its folder is missing or not writable)."""


def write_pidfile(path: Path, pid: int | None = None) -> None:
    """Write ``pid`` (default: this process) to ``path``, atomically."""
    pid = os.getpid() if pid is None else pid
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(f"{pid}\n", encoding="ascii")
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise PidfileError(exc.errno, f"cannot write the pidfile {path} ({exc.strerror}); "
                           "create its folder or pass another --pidfile") from exc


def remove_pidfile(path: Path, pid: int | None = None) -> None:
    """Remove ``path`` if it still names ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    try:
        if path.read_text(encoding="ascii", errors="replace").strip() != str(pid):
            return
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        logger.warning("could not remove the pidfile %s: %s", path, exc)


@contextlib.contextmanager
def pidfile(path: Path | None) -> Iterator[None]:
    """This process's pidfile at ``path`` while the block runs (nothing for None)."""
    if path is None:
        yield
        return
    write_pidfile(path)
    try:
        yield
    finally:
        remove_pidfile(path)
