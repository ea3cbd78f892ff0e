"""Running a click command against one test's Redis and namespace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

Run = Callable[..., Result]


def command_runner(command: click.Command, redis_url: str, namespace: str, tmp_path: Path,
                   monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run(*args)`` invokes ``command`` with ``--redis-url``/``--namespace`` appended,
    from ``tmp_path`` so that no project config file is picked up."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        words = [*args, "--redis-url", redis_url, "--namespace", namespace]
        return runner.invoke(command, words, catch_exceptions=False, input=input)

    return invoke
