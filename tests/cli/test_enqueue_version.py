"""``cogworker enqueue`` and ``cogworker version``, through click's runner."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner

from cogworker.__about__ import __version__
from cogworker.cli import cli
from cogworker.redis.keys import KeySchema
from cogworker.redis.server_state import project_server_status

APP_SOURCE = """
import cogworker
app = cogworker.App()

@app.job(queue="mail", retry=2, name="SendMail")
def send(to): ...

@app.job
def add(a, b, c=0): ...

@app.job
class Report(cogworker.Job):
    def perform(self, month): ...
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "cliapp.py").write_text(APP_SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_version() -> None:
    result = CliRunner().invoke(cli, ["version"])
    assert result.exit_code == 0 and result.output.strip() == f"cogworker {__version__}"


def test_enqueue_uses_the_job_options(
    project: Path, redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema
) -> None:
    result = CliRunner().invoke(cli, [
        "enqueue", "-A", "cliapp:app", "--redis-url", redis_url, "--namespace", namespace,
        "SendMail", '["ada@example.org"]'])
    assert result.exit_code == 0, result.output
    jid = result.output.strip()
    job = json.loads(redis_client.lindex(keys.queue("mail"), 0) or b"null")
    assert job["jid"] == jid and job["args"] == ["ada@example.org"] and job["retry"] == 2


def test_enqueue_by_name_only_and_scheduled(
    project: Path, redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema
) -> None:
    result = CliRunner().invoke(cli, [
        "enqueue", "--redis-url", redis_url, "--namespace", namespace, "Other", "[1]",
        "--queue", "low", "--in", "60"])
    assert result.exit_code == 0, result.output
    entries: list[tuple[bytes, float]] = redis_client.zrange(  # type: ignore[assignment]
        keys.schedule, 0, -1, withscores=True)
    ((raw, score),) = entries
    assert json.loads(raw)["queue"] == "low"
    assert time.time() + 50 < score < time.time() + 70


@pytest.mark.parametrize(("args", "message"), [
    (["Job", "not json"], "JSON_ARGS is not JSON"),
    (["Job", '{"a": 1}'], "must be a JSON array"),
    (["Job", "[]", "--in", "-1"], "--in must be >= 0"),
    (["-A", "nosuchmodule:app", "Job"], "no module named 'nosuchmodule'"),
    (["Job", "[NaN]"], "JSON_ARGS: argument #1 of job 'Job' is a float (nan), which is not JSON"),
    (["Job", "[1, Infinity]"], "argument #2 of job 'Job' is a float (inf)"),
    (["-A", "cliapp:app", "SendMial", "[1]"],
     "the app registers no job named 'SendMial'. Did you mean 'SendMail'?"),
    (["-A", "cliapp:app", "add", "[1, 2]"], "Did you mean 'cliapp.add'?"),
    (["-A", "cliapp:app", "cliapp.ad", "[1, 2]"], "Did you mean 'cliapp.add'?"),
    (["-A", "cliapp:app", "cliapp.add", "[1]"],
     "job 'cliapp.add' takes (a, b, c=0), and [1] does not fit: missing a required argument"),
    (["-A", "cliapp:app", "cliapp.add", "[1, 2, 3, 4]"], "too many positional arguments"),
    (["-A", "cliapp:app", "cliapp.Report", "[]"],
     "job 'cliapp.Report' takes (month), and [] does not fit"),
])
def test_enqueue_usage_errors_exit_2(project: Path, redis_url: str, args: list[str],
                                     message: str) -> None:
    result = CliRunner().invoke(cli, ["enqueue", "--redis-url", redis_url, *args])
    assert result.exit_code == 2
    assert message in result.output


def test_arguments_that_fit_are_pushed(
    project: Path, redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema
) -> None:
    for name, args in (("cliapp.add", "[1, 2]"), ("cliapp.add", "[1, 2, 3]"),
                       ("cliapp.Report", '["2025-01"]')):
        result = CliRunner().invoke(cli, ["enqueue", "-A", "cliapp:app", "--redis-url",
                                          redis_url, "--namespace", namespace, name, args])
        assert result.exit_code == 0, result.output
        assert "not checked" not in result.output
    assert redis_client.llen(keys.queue("default")) == 3


def test_without_an_app_it_says_nothing_was_checked(
    project: Path, redis_url: str, namespace: str, redis_client: redis.Redis
) -> None:
    result = CliRunner().invoke(cli, ["enqueue", "--redis-url", redis_url, "--namespace",
                                      namespace, "Anything", "[1]"])
    assert result.exit_code == 0
    assert "no app given (-A), so the job name and its arguments were not checked" in (
        result.stderr)


def test_without_a_url_the_private_server_is_used(
    project: Path, redis_project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(redis_project_dir)
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("COGWORKER_REDIS_URL", raising=False)
    result = CliRunner().invoke(cli, ["enqueue", "-A", "cliapp:app", "SendMail", '["x"]'])
    assert result.exit_code == 0, result.output
    state = project_server_status(redis_project_dir)
    assert state is not None
    client = redis.Redis.from_url(state.url)
    try:
        assert client.llen(KeySchema().queue("mail")) == 1
    finally:
        client.close()
