"""``cogworker redis start|stop|status|url`` on a project folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from click.testing import CliRunner

from cogworker.cli.redis_cmd import redis_group


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(redis_group, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_start_says_where_without_the_password_and_reuses_the_server(
        redis_project_dir: Path) -> None:
    code, output = invoke("start", "--project-dir", str(redis_project_dir))
    assert code == 0
    url = invoke("url", "--project-dir", str(redis_project_dir))[1].strip()
    assert redis.Redis.from_url(url).ping() is True
    password = redis.Redis.from_url(url).connection_pool.connection_kwargs["password"]
    assert password and password not in output  # start is for eyes and terminals
    assert url.replace(f":{password}@", "") in output
    assert "cogworker redis url" in output
    assert invoke("start", "--project-dir", str(redis_project_dir)) == (0, output)


def test_status_and_url_describe_the_running_server(redis_project_dir: Path) -> None:
    invoke("start", "--project-dir", str(redis_project_dir))
    url = invoke("url", "--project-dir", str(redis_project_dir))[1].strip()
    code, status = invoke("status", "--project-dir", str(redis_project_dir))
    assert code == 0
    assert status.startswith("running: pid ")
    password = redis.Redis.from_url(url).connection_pool.connection_kwargs["password"]
    assert password and password not in status  # status is for eyes and logs
    assert url.replace(f":{password}@", "") in status
    assert invoke("url", "--project-dir", str(redis_project_dir)) == (0, url + "\n")


def test_stop_stops_it_and_status_says_so(redis_project_dir: Path) -> None:
    invoke("start", "--project-dir", str(redis_project_dir))
    code, output = invoke("stop", "--project-dir", str(redis_project_dir))
    assert code == 0
    assert output.startswith("stopped redis-server pid ")

    code, status = invoke("status", "--project-dir", str(redis_project_dir))
    assert code == 1
    assert status.startswith("not running")
    code, output = invoke("url", "--project-dir", str(redis_project_dir))
    assert code == 1
    assert "cogworker redis start" in output
    code, output = invoke("stop", "--project-dir", str(redis_project_dir))
    assert code == 0
    assert output.startswith("no redis-server was running")


def test_the_project_is_the_current_directory_by_default(
    redis_project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(redis_project_dir)
    code, _ = invoke("start")
    assert code == 0
    assert (redis_project_dir / ".cogworker" / "redis" / "server.json").is_file()
    code, url = invoke("url", "--project-dir", str(redis_project_dir))
    assert code == 0
    assert redis.Redis.from_url(url.strip()).ping() is True


def test_start_without_a_binary_is_a_clear_error(
    redis_project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGWORKER_REDIS_SERVER", str(redis_project_dir / "missing"))
    code, output = invoke("start", "--project-dir", str(redis_project_dir))
    assert code == 1
    assert "COGWORKER_REDIS_SERVER" in output
