"""examples/fastapi: uvicorn serving the app on 127.0.0.1 and a worker, both subprocesses;
a real HTTP request enqueues the job and the worker runs it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from example_apps.conftest import EXAMPLES, StartWorker
from helpers.workers import wait_until

pytestmark = pytest.mark.slow


def post_json(url: str, body: object) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def api_url(tmp_path: Path, example_env: dict[str, str]) -> Iterator[str]:
    """uvicorn on a socket this test bound to 127.0.0.1 (handed over with --fd: no race for
    a free port)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    log_path = tmp_path / "uvicorn.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "web:api", "--fd", str(listener.fileno())],
            cwd=EXAMPLES / "fastapi", pass_fds=(listener.fileno(),), stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **example_env, "EXAMPLE_OUTBOX": str(tmp_path / "outbox.txt")})
    listener.close()
    try:
        wait_until(lambda: b"Application startup complete" in log_path.read_bytes()
                   or server.poll() is not None, 30, log_path.read_text)
        assert server.poll() is None, log_path.read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_signup_enqueues_the_welcome_mail_and_the_worker_sends_it(
        api_url: str, start_worker: StartWorker, tmp_path: Path) -> None:
    outbox = tmp_path / "outbox.txt"
    worker = start_worker("fastapi", "-q", "mail",
                          env={"EXAMPLE_OUTBOX": str(outbox)})

    status, body = post_json(f"{api_url}/signups", {"email": "ada@example.com"})

    assert status == 202
    assert isinstance(body["jid"], str)
    wait_until(lambda: outbox.exists() and "welcome ada@example.com" in outbox.read_text(),
               30, lambda: f"the job never ran:\n{worker.output()[-3000:]}")
    worker.wait_for_output(f"jid={body['jid']}")


def test_a_bad_address_is_refused_and_enqueues_nothing(api_url: str) -> None:
    status, body = post_json(f"{api_url}/signups", {"email": "not-an-address"})

    assert status == 422
    assert body["detail"] == "not an e-mail address"
