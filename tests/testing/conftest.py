"""Fixtures for the testing-support tests: a small user project run through ``pytester``.

Each test writes the example project (``example.py``: the app and its jobs, and a
``conftest.py`` with the ``cogworker_app`` fixture) plus test files of its own into a fresh
folder and runs pytest there in-process, as a user of cogworker would run their suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cogworker.app import App
from testing.example_project import EXAMPLE_APP, EXAMPLE_CONFTEST

pytest_plugins = ["pytester"]

RunExample = Callable[..., pytest.RunResult]

OFFLINE = "redis://127.0.0.1:1/0"  # nothing listens: the test modes never connect


@pytest.fixture
def app() -> Iterator[App]:
    """An app whose Redis URL reaches nothing, for tests of the fake and inline modes."""
    application = App(redis_url=OFFLINE)
    yield application
    application.close()


@pytest.fixture
def run_example(pytester: pytest.Pytester) -> RunExample:
    """``run_example(tests, *args)``: write the example project and ``tests`` (the text of
    ``test_example.py``), run pytest on it in-process and return the result."""

    def run(tests: str, *args: str) -> pytest.RunResult:
        pytester.makepyfile(example=EXAMPLE_APP, conftest=EXAMPLE_CONFTEST,
                            test_example=tests)
        return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)

    return run


@pytest.fixture
def outer_redis(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> str:
    """Make the example project's ``cogworker_redis_url`` the suite's own server."""
    monkeypatch.setenv("EXAMPLE_REDIS_URL", redis_url)
    return redis_url


@pytest.fixture
def docs_root() -> Path:
    return Path(__file__).resolve().parents[2] / "docs"
