"""``cogworker web``: serves the dashboard with uvicorn, refuses public addresses unguarded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import redis
from click.testing import CliRunner

from cogworker.cli import cli
from cogworker.redis.server_process import free_port
from helpers.cli import Run, command_runner


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    return command_runner(cli, redis_url, namespace, tmp_path, monkeypatch)


def test_a_public_address_is_refused_without_auth(run: Run) -> None:
    result = run("web", "--host", "0.0.0.0")
    assert result.exit_code == 2
    assert "refusing to serve the dashboard on 0.0.0.0" in result.output
    assert "cogworker_web_authorize" in result.output and "--insecure-no-auth" in result.output


def test_help_names_the_guard() -> None:
    result = CliRunner().invoke(cli, ["web", "--help"])
    assert result.exit_code == 0
    assert "--insecure-no-auth" in result.output and "127.0.0.1" in result.output


@pytest.mark.slow
def test_it_serves_the_dashboard_on_loopback(redis_url: str, namespace: str, tmp_path: Path,
                                             redis_client: redis.Redis) -> None:
    port = free_port()
    command = [sys.executable, "-m", "cogworker", "web", "--port", str(port),
               "--redis-url", redis_url, "--namespace", namespace]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        output = []
        assert process.stdout is not None
        for line in process.stdout:  # until uvicorn says it listens (or the process ends)
            output.append(line)
            if "Uvicorn running on" in line:
                break
        assert process.poll() is None, "".join(output)
        page = httpx.get(f"http://127.0.0.1:{port}/jobs", timeout=10)
        assert page.status_code == 200 and "<h1>Jobs</h1>" in page.text
        assert "server" not in page.headers
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=15)
