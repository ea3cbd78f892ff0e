"""``cogworker metrics``: the table and JSON after a real worker's run, and usage errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogworker.app import App
from cogworker.cli import cli
from helpers.cli import Run, command_runner
from plugins.metrics.workload import BROKEN_RUNS, FAST_RUNS, metrics_app, run_workload


@pytest.fixture
def app(redis_url: str, namespace: str, redis_client: object) -> Iterator[App]:
    application = metrics_app(redis_url, namespace)
    try:
        yield application
    finally:
        application.close()


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Run:
    return command_runner(cli, redis_url, namespace, tmp_path, monkeypatch)


def test_the_table_has_percentiles_per_class(app: App, run: Run) -> None:
    run_workload(app)

    result = run("metrics", "--since", "30m")

    assert result.exit_code == 0, result.output
    header, *lines = result.output.splitlines()
    assert header.split() == ["CLASS", "QUEUE", "PROCESSED", "FAILED", "FAIL", "%", "MEAN",
                              "P50", "P95", "P99"]
    rows = {line.split()[0]: line.split() for line in lines}
    assert rows["Fast"][:5] == ["Fast", "default", str(FAST_RUNS), "0", "0.0%"]
    assert rows["Broken"][:5] == ["Broken", "default", "0", str(BROKEN_RUNS), "100.0%"]
    assert all(cell.endswith(("ms", "s")) for cell in rows["Slow"][5:])


def test_json_for_one_class(app: App, run: Run) -> None:
    run_workload(app)

    result = run("metrics", "--class", "Fast", "--since", "1d", "--json")

    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["since"] == 86400 and data["class"] == "Fast"
    [row] = data["rows"]
    assert (row["class"], row["processed"], row["failed"]) == ("Fast", FAST_RUNS, 0)
    assert row["p50_ms"] is not None and sum(row["histogram"]) == FAST_RUNS


def test_nothing_ran_says_how_to_turn_the_plugin_on(run: Run) -> None:
    result = run("metrics")

    assert result.exit_code == 0
    assert "--plugin metrics" in result.output


@pytest.mark.parametrize("since", ["soon", "0m", "10", "9d"])
def test_a_bad_window_is_a_usage_error(run: Run, since: str) -> None:
    result = run("metrics", "--since", since)

    assert result.exit_code == 2
    assert "--since" in result.output


def test_a_bad_option_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    (tmp_path / "cogworker.toml").write_text("[plugin_options.metrics]\nmax_series = 0\n")

    result = run("metrics")

    assert result.exit_code == 2
    assert "plugin_options.metrics.max_series" in result.output


def test_serve_without_prometheus_client_names_the_extra(
        run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)

    result = run("metrics", "serve", "--port", "0")

    assert result.exit_code == 2
    assert "pip install 'cogworker[prometheus]'" in result.output
