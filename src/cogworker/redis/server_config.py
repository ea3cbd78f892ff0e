"""What makes a private redis-server private to the user who runs it.

A redis-server on 127.0.0.1 with no password serves every local user: protected mode does
not cover loopback. The project's shared server (:mod:`cogworker.redis.server_state`) is
therefore started with

* a generated password, kept in ``password`` (mode 0600) in its data folder and written
  into the server's ``redis.conf`` (mode 0600), never on its command line, which every
  user can read in ``/proc``; the project's own processes read it from ``server.json``
  (mode 0600) as part of the URL;
* its data folder at mode 0700 and the server's umask at 077, so the append-only file,
  snapshots, log and records are the owner's alone;
* the commands that reach beyond the data switched off: ``enable-protected-configs no``,
  ``enable-debug-command no`` and ``enable-module-command no`` on Redis 7 and later, and
  ``rename-command`` of ``CONFIG``, ``DEBUG`` and ``MODULE`` to nothing before 7, which
  has no such switches (there ``CONFIG SET dir`` + ``SAVE`` writes a file anywhere the
  server may, and ``MODULE LOAD`` runs native code in it).
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import subprocess
from pathlib import Path

PASSWORD_FILE_NAME = "password"
CONFIG_FILE_NAME = "redis.conf"
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
SERVER_UMASK = 0o077
_VERSION = re.compile(rb"\bv=(\d+)\.(\d+)(?:\.(\d+))?")
_SWITCHES_SINCE = (7, 0)
_LOCKED_COMMANDS = ("CONFIG", "DEBUG", "MODULE")


@functools.cache
def server_version(executable: str) -> tuple[int, ...]:
    """The version of a redis-server binary (``redis-server --version``); (0,) when its
    answer cannot be read, which gets the settings every version accepts."""
    try:
        output = subprocess.run([executable, "--version"], capture_output=True, timeout=10,
                                check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return (0,)
    match = _VERSION.search(output)
    return tuple(int(part) for part in match.groups(default=b"0")) if match else (0,)


def lockdown_lines(version: tuple[int, ...]) -> list[str]:
    """Config lines that switch off CONFIG, DEBUG and MODULE for this server version."""
    if version >= _SWITCHES_SINCE:
        return ["enable-protected-configs no", "enable-debug-command no",
                "enable-module-command no"]
    return [f'rename-command {command} ""' for command in _LOCKED_COMMANDS]


def make_private_dir(directory: Path) -> None:
    """Create ``directory`` (mode 0700) or make it so, with every file in it (and in the
    folders Redis 7 keeps its append-only files in) readable by the owner only."""
    directory.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    os.chmod(directory, PRIVATE_DIR_MODE)
    for entry in directory.iterdir():
        if entry.is_symlink():
            continue
        if entry.is_dir():
            os.chmod(entry, PRIVATE_DIR_MODE)
            for inner in entry.iterdir():
                if inner.is_file() and not inner.is_symlink():
                    os.chmod(inner, PRIVATE_FILE_MODE)
        elif entry.is_file():
            os.chmod(entry, PRIVATE_FILE_MODE)


def write_private_file(path: Path, content: str) -> None:
    """Write ``content`` to ``path`` readable by the owner only (replaced atomically)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(content)
    os.chmod(temporary, PRIVATE_FILE_MODE)
    os.replace(temporary, path)


def project_password(directory: Path) -> str:
    """The password kept in ``directory`` (created on first use), so a restarted server
    keeps the URL its users know."""
    path = directory / PASSWORD_FILE_NAME
    try:
        password = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        password = ""
    if not password:
        password = secrets.token_urlsafe(32)
        write_private_file(path, password + "\n")
    return password


def write_server_config(directory: Path, password: str | None, lock_down: bool,
                        version: tuple[int, ...]) -> Path:
    """The ``redis.conf`` (mode 0600) a server reads first: its password and lock-down."""
    lines = ["# written by cogworker at each start; edits are lost"]
    if password is not None:
        lines.append(f'requirepass "{password}"')
    if lock_down:
        lines += lockdown_lines(version)
    path = directory / CONFIG_FILE_NAME
    write_private_file(path, "\n".join(lines) + "\n")
    return path
