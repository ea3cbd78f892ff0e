"""The one private redis-server that every process of a project shares.

``cogworker run`` in one shell and ``cogworker enqueue`` in another must talk to the same
Redis. The first caller of :func:`ensure_project_server` starts a *detached* redis-server (its
own session, so it outlives the starter and ignores the starter's Ctrl-C) with its data in
``<project>/.cogworker/redis/``, and records it in ``server.json`` there; later callers find
it and reuse it. A file lock (``server.lock``, ``fcntl.flock``) makes the check-then-start
atomic across processes. A record whose process is gone (a reboot, a SIGKILL) is stale: the
next caller starts a new server on the same data folder, so the append-only file brings the
data back, and on the same port when it is still free.

The shared server runs until :func:`stop_project_server` (``cogworker redis stop``) stops it;
nothing stops it automatically. POSIX only (it relies on ``fcntl``).

It is private to the user who started it (:mod:`cogworker.redis.server_config`): it wants a
password, kept in ``password`` beside ``server.json`` (both mode 0600, in a 0700 folder),
and its URL, as :func:`ensure_project_server` returns it and ``server.json`` records it,
carries that password. Other local users can reach its port but cannot authenticate, nor
read its files.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from cogworker.redis.server import DEFAULT_DATA_DIR, RedisServer
from cogworker.redis.server_config import (
    PRIVATE_DIR_MODE,
    project_password,
    write_private_file,
)
from cogworker.redis.server_process import (
    LOCALHOST,
    Address,
    pid_alive,
    port_is_free,
    probe_server,
    shut_down_server,
)

logger = logging.getLogger(__name__)

STATE_FILE_NAME = "server.json"
LOCK_FILE_NAME = "server.lock"


@dataclass(frozen=True)
class ServerState:
    """What ``server.json`` records about a project's shared server."""

    pid: int
    port: int
    url: str
    data_dir: str
    password: str | None = None  # None in a record an older version wrote

    @property
    def address(self) -> Address:
        return (LOCALHOST, self.port)


def project_redis_dir(project_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<project>/.cogworker/redis`` (the project is the current directory by default)."""
    root = Path(project_dir) if project_dir is not None else Path.cwd()
    return root.absolute() / DEFAULT_DATA_DIR


def read_state(redis_dir: Path) -> ServerState | None:
    """The recorded server, or None when there is no readable record."""
    path = redis_dir / STATE_FILE_NAME
    try:
        raw = json.loads(path.read_text())
        password = raw.get("password")
        return ServerState(
            pid=int(raw["pid"]), port=int(raw["port"]), url=str(raw["url"]),
            data_dir=str(raw["data_dir"]),
            password=password if isinstance(password, str) else None,
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("ignoring unreadable redis-server record %s: %s", path, exc)
        return None


def is_alive(state: ServerState) -> bool:
    """Whether the recorded server still runs: its port answers and reports its pid."""
    probe = probe_server(state.address, password=state.password)
    if not probe.answering:
        return False
    if probe.pid is not None:  # INFO told us who answers: it must be the recorded process
        return probe.pid == state.pid
    return pid_alive(state.pid)


def ensure_project_server(
    project_dir: str | os.PathLike[str] | None = None,
    *,
    appendonly: bool = True,
    extra_args: Sequence[str] = (),
) -> str:
    """The URL of the project's shared redis-server, started (detached) if none runs.

    ``appendonly`` and ``extra_args`` apply only when a new server is started; a running
    one is reused as it is.
    """
    redis_dir = project_redis_dir(project_dir)
    with _locked(redis_dir):
        state = read_state(redis_dir)
        if state is not None and is_alive(state):
            logger.debug("reusing redis-server pid %s at %s", state.pid, state.url)
            return state.url
        if state is not None:
            logger.info("redis-server pid %s recorded in %s is gone; starting a new one",
                        state.pid, redis_dir / STATE_FILE_NAME)
        port = state.port if state is not None and port_is_free(state.port) else None
        password = project_password(redis_dir)
        server = RedisServer(
            redis_dir, port=port, appendonly=appendonly, extra_args=extra_args, detached=True,
            password=password, private=True,
        ).start()
        assert server.pid is not None  # set by start()
        assert server.port is not None
        new_state = ServerState(
            pid=server.pid, port=server.port, url=server.url, data_dir=str(redis_dir),
            password=password,
        )
        _write_state(redis_dir, new_state)
        return new_state.url


def project_server_status(
    project_dir: str | os.PathLike[str] | None = None,
) -> ServerState | None:
    """The project's shared server if it runs, else None."""
    redis_dir = project_redis_dir(project_dir)
    with _locked(redis_dir):
        state = read_state(redis_dir)
        return state if state is not None and is_alive(state) else None


def stop_project_server(
    project_dir: str | os.PathLike[str] | None = None, timeout: float = 10.0
) -> ServerState | None:
    """Stop the project's shared server; what was stopped, or None if none ran.

    A stale record is removed without signalling anything: its pid may belong to another
    program by now.
    """
    redis_dir = project_redis_dir(project_dir)
    with _locked(redis_dir):
        state = read_state(redis_dir)
        running = state is not None and is_alive(state)
        if state is not None and running:
            shut_down_server(state.pid, state.address, timeout, password=state.password)
            logger.info("stopped redis-server pid %s at %s", state.pid, state.url)
        (redis_dir / STATE_FILE_NAME).unlink(missing_ok=True)
        return state if running else None


def _write_state(redis_dir: Path, state: ServerState) -> None:
    write_private_file(redis_dir / STATE_FILE_NAME, json.dumps(asdict(state), indent=2) + "\n")


@contextlib.contextmanager
def _locked(redis_dir: Path) -> Iterator[None]:
    """Hold the project's server lock (released by the OS if this process dies)."""
    redis_dir.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    os.chmod(redis_dir, PRIVATE_DIR_MODE)
    lock_fd = os.open(redis_dir / LOCK_FILE_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(lock_fd, "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
