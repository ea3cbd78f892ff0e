"""examples/flask: the app served by werkzeug's server on 127.0.0.1 in this process, and a
worker subprocess; a real HTTP request enqueues the job and the worker runs it."""

from __future__ import annotations

import importlib
import json
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from example_apps.conftest import EXAMPLES, StartWorker
from helpers.workers import wait_until

pytestmark = pytest.mark.slow


def post_form(url: str, form: dict[str, str]) -> tuple[int, bytes]:
    data = urllib.parse.urlencode(form).encode()
    try:
        with urllib.request.urlopen(url, data=data, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture
def web_url(example_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from werkzeug.serving import make_server

    for name, value in example_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(EXAMPLES / "flask"))
    for name in ("web", "jobs"):  # another example's modules of the same names
        monkeypatch.delitem(sys.modules, name, raising=False)
    web = importlib.import_module("web")
    jobs = importlib.import_module("jobs")
    server = make_server("127.0.0.1", 0, web.web, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=30)
        jobs.app.close()
        for name in ("web", "jobs"):
            sys.modules.pop(name, None)


def test_a_report_request_is_enqueued_and_the_worker_builds_it(
        web_url: str, start_worker: StartWorker, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    worker = start_worker("flask", "-q", "reports", env={"EXAMPLE_REPORTS": str(reports)})

    status, body = post_form(f"{web_url}/accounts/acme/reports", {"month": "2024-05"})

    assert status == 202
    jid = json.loads(body)["jid"]
    report = reports / "acme-2024-05.txt"
    wait_until(report.exists, 30, lambda: f"the job never ran:\n{worker.output()[-3000:]}")
    assert report.read_text() == "report for acme, 2024-05\n"
    worker.wait_for_output(f"jid={jid}")


def test_a_bad_month_is_refused(web_url: str) -> None:
    status, body = post_form(f"{web_url}/accounts/acme/reports", {"month": "May"})

    assert status == 400
    assert b"month must look like 2024-05" in body
