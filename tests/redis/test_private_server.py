"""The project's private redis-server (``cogworker redis start``, ``cogworker run`` with no
URL) is its owner's alone: another local user reaches its port but cannot authenticate, and
cannot read its files; even the owner cannot reach beyond the data (CONFIG, MODULE, DEBUG).

The other user is ``nobody``: a forked child of this test drops to its uid and gid (so
root is needed; CI runs as root) and reports what it could do.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from cogworker.app import App
from cogworker.redis.connection import redact_url
from cogworker.redis.server_state import (
    ensure_project_server,
    project_redis_dir,
    read_state,
    stop_project_server,
)
from helpers.redis_access import client_of

_RESP_LINE = 200


@pytest.fixture
def open_project(redis_server_binary: str) -> Iterator[Path]:
    """A project folder every local user may enter (as a real one in a home folder is),
    unlike pytest's 0700 tmp_path; its server is stopped afterwards."""
    project = Path(tempfile.mkdtemp(prefix="cw-project-"))
    project.chmod(0o755)
    try:
        yield project
    finally:
        stop_project_server(project)
        shutil.rmtree(project, ignore_errors=True)


def as_user(name: str, action: Any) -> Any:
    """Run ``action()`` in a forked child with the uid and gid of user ``name``; its JSON
    result, sent back through a pipe."""
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but the suite does not run as root", pytrace=False)
        pytest.skip("acting as another user needs root")
    user = pwd.getpwnam(name)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become the other user, act, report, exit without cleanup
        code = 0
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            os.write(write_end, json.dumps(action()).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        output = reader.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, output
    return json.loads(output)


def command(port: int, *words: str) -> str:
    """The first line of the reply to one command sent as RESP on a raw socket."""
    request = b"*%d\r\n" % len(words) + b"".join(
        b"$%d\r\n%s\r\n" % (len(word.encode()), word.encode()) for word in words)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        return sock.recv(_RESP_LINE).split(b"\r\n", 1)[0].decode()


def readable(path: Path) -> bool | str:
    try:
        if path.is_dir():
            os.listdir(path)
        else:
            path.read_bytes()
    except PermissionError:
        return False
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return True


def test_another_local_user_can_neither_use_the_server_nor_read_its_files(
    open_project: Path,
) -> None:
    url = ensure_project_server(open_project)
    redis.Redis.from_url(url).lpush("cogworker:queue:default", b"the owner's job")
    redis_dir = project_redis_dir(open_project)
    state = read_state(redis_dir)
    assert state is not None
    files = sorted(redis_dir.iterdir())
    assert {path.name for path in files} >= {"server.json", "password", "redis.conf",
                                              "redis.log"}

    def as_nobody() -> dict[str, Any]:
        return {
            "ping": command(state.port, "PING"),
            "push": command(state.port, "LPUSH", "cogworker:queue:default", "{}"),
            "config": command(state.port, "CONFIG", "SET", "dir", "/tmp"),
            "guess": command(state.port, "AUTH", "not-the-password"),
            "read": {path.name: readable(path) for path in [redis_dir, *files]},
        }

    seen = as_user("nobody", as_nobody)
    assert seen["ping"].startswith("-NOAUTH"), seen
    assert seen["push"].startswith("-NOAUTH"), seen
    assert seen["config"].startswith(("-NOAUTH", "-ERR unknown command")), seen
    assert seen["guess"].startswith(("-WRONGPASS", "-ERR invalid password")), seen
    assert set(seen["read"].values()) == {False}, seen
    assert redis.Redis.from_url(url).lrange("cogworker:queue:default", 0, -1) == [
        b"the owner's job"]

    assert stat.S_IMODE(redis_dir.stat().st_mode) == 0o700
    for path in redis_dir.rglob("*"):
        wanted = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == wanted, path
    assert state.password is not None
    assert state.password not in Path(f"/proc/{state.pid}/cmdline").read_text()


def test_even_the_owner_cannot_reconfigure_the_server_or_load_code_into_it(
    open_project: Path,
) -> None:
    client = redis.Redis.from_url(ensure_project_server(open_project))
    for words in (("CONFIG", "SET", "dir", "/tmp"), ("MODULE", "LOAD", "/tmp/evil.so"),
                  ("DEBUG", "SLEEP", "0")):
        with pytest.raises(redis.ResponseError) as refused:
            cast(Any, client).execute_command(*words)
        message = str(refused.value)
        assert any(reason in message for reason in (
            "unknown command", "protected config", "not allowed")), message
    assert client.ping() is True


def test_an_app_without_a_url_uses_the_private_server_with_its_password(
    open_project: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(open_project)
    monkeypatch.delenv("COGWORKER_REDIS_URL", raising=False)
    app = App()
    try:
        assert client_of(app).ping() is True
        state = read_state(project_redis_dir(open_project))
        assert state is not None and state.password is not None
        assert app.broker.describe() == redact_url(state.url)  # no password shown
    finally:
        app.close()
    assert ensure_project_server(open_project) == state.url  # reused, same password
    stop_project_server(open_project)
    assert ensure_project_server(open_project).startswith(f"redis://:{state.password}@")
