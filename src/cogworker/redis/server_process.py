"""Looking at a redis-server process from outside: what answers at an address, is a pid
alive, shut it down, and which port is free.

The probe speaks the Redis protocol over a plain socket, so it works before, during and after
a server's start-up without a client library, and it can tell *which* server answers (INFO
reports the process id): a foreign server on a reused port is never mistaken for ours.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

logger = logging.getLogger(__name__)

LOCALHOST = "127.0.0.1"

Address: TypeAlias = "tuple[str, int] | str"
"""Where a server listens: ``(host, port)``, or the path of a unix socket."""

# Detached servers this process started: kept so that pid_alive() can reap them, since a
# child that exited stays a zombie (and looks alive to kill(pid, 0)) until its parent waits.
_children: dict[int, subprocess.Popen[bytes]] = {}


def remember_child(process: subprocess.Popen[bytes]) -> None:
    """Keep a detached child so :func:`pid_alive` can reap it."""
    _children[process.pid] = process


def forget_child(pid: int) -> None:
    _children.pop(pid, None)


@dataclass(frozen=True)
class ServerProbe:
    """What answered at an address."""

    answering: bool  # something speaking the Redis protocol replied
    ready: bool  # it serves commands (it is not still loading its data)
    pid: int | None  # the process id it reports, when INFO is allowed


_NOTHING = ServerProbe(answering=False, ready=False, pid=None)
_PROCESS_ID = re.compile(rb"^process_id:(\d+)", re.MULTILINE)


def probe_server(address: Address, timeout: float = 1.0, *,
                 password: str | None = None) -> ServerProbe:
    """Ask whatever listens at ``address`` for PING and its process id (after AUTH with
    ``password``, when given). A server that wants a password it was not given answers,
    but tells no pid."""
    try:
        with _connect(address, timeout, password) as sock:
            pong = _command(sock, "PING")
            info = _command(sock, "INFO", "server")
    except OSError:
        return _NOTHING
    if not pong:
        return _NOTHING
    match = _PROCESS_ID.search(info)
    return ServerProbe(
        answering=True,
        ready=not pong.startswith(b"-LOADING"),
        pid=int(match.group(1)) if match else None,
    )


def send_shutdown(address: Address, timeout: float = 1.0, *,
                  password: str | None = None) -> bool:
    """Send ``SHUTDOWN NOSAVE`` (the append-only file is still flushed), after AUTH with
    ``password`` when given.

    True when the server took it (it closes the connection); False when it refused (the
    command renamed, a password needed) or nothing answered.
    """
    try:
        with _connect(address, timeout, password) as sock:
            return _command(sock, "SHUTDOWN", "NOSAVE") == b""
    except OSError:
        return False


def _connect(address: Address, timeout: float, password: str | None = None) -> socket.socket:
    """A connection to ``address``, authenticated when ``password`` is given (a refused
    AUTH is left for the next command's reply to tell)."""
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(address)
        if password is not None:
            _command(sock, "AUTH", password)
    except OSError:
        sock.close()
        raise
    return sock


def _command(sock: socket.socket, *args: str) -> bytes:
    """Send one command; the reply's first line (plus the payload of a bulk reply)."""
    request = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg.encode()
        request.append(b"$%d\r\n%s\r\n" % (len(data), data))
    sock.sendall(b"".join(request))
    reply = b""
    while b"\r\n" not in reply:
        chunk = sock.recv(4096)
        if not chunk:
            return reply  # the server closed the connection (SHUTDOWN does)
        reply += chunk
    line, _, rest = reply.partition(b"\r\n")
    if line.startswith(b"$") and int(line[1:]) > 0:
        size = int(line[1:]) + 2
        while len(rest) < size:
            chunk = sock.recv(max(4096, size - len(rest)))
            if not chunk:
                break
            rest += chunk
        return line + b"\r\n" + rest[: size - 2]
    return line


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie waiting to be reaped."""
    child = _children.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del _children[pid]
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def free_port(host: str = LOCALHOST) -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def shut_down_server(pid: int, address: Address, timeout: float = 10.0, *,
                     password: str | None = None) -> bool:
    """Stop the server ``pid`` listening at ``address``; whether it is gone.

    SHUTDOWN NOSAVE first (after AUTH with ``password``), then SIGTERM, then SIGKILL,
    waiting up to ``timeout`` after each. Only call it for a pid that :func:`probe_server`
    confirmed.
    """
    if not send_shutdown(address, password=password):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if wait_for_exit(pid, timeout):
            return True
        logger.warning("redis-server pid %s did not exit; sending %s", pid, sig.name)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    return wait_for_exit(pid, timeout)


def wait_for_exit(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``pid`` to end; whether it did."""
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def port_is_free(port: int, host: str = LOCALHOST) -> bool:
    """Whether a TCP port on ``host`` can be bound right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
