"""pytest plugin for projects that use cogworker (registered through ``pytest11``).

Define the app your tests use once, in your ``conftest.py``::

    @pytest.fixture
    def cogworker_app():
        from myproject.jobs import app
        return app

Fixtures:

* ``cogworker_fake`` — ``cogworker_app`` in fake mode for the test; yields ``app.testing``.
  Afterwards the previous mode is back, the clock runs again and nothing stays recorded;
* ``cogworker_inline`` — the same in inline mode;
* ``cogworker_redis_url`` — a private redis-server for the test session (the embedded
  server cogworker itself uses), started on first use and stopped at the end;
* ``cogworker_namespace`` — a key namespace unique to the test; its keys are deleted after;
* ``cogworker_worker`` — ``cogworker_app`` pointed at ``cogworker_redis_url`` and
  ``cogworker_namespace`` (with ``app.configure(cli=...)``), and a real worker for it in
  the test's process: ``cogworker_worker.run_until_idle(timeout=10)``. Afterwards the app
  is configured again from its usual sources (``app.configure()``).

Nothing here runs unless a test asks for one of these fixtures.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.testing.modes import Testing
    from cogworker.testing.worker import InProcessWorker


@pytest.fixture
def cogworker_app() -> App:
    """The app under test: override this fixture in your conftest.py."""
    pytest.fail(
        "the cogworker fixtures need your app: define a fixture named cogworker_app in your "
        "conftest.py that returns it (see docs/how-to/test-your-jobs.md)", pytrace=False,
    )


def _in_mode(app: App, mode: str) -> Iterator[Testing]:
    testing = app.testing
    testing.clear_all()
    with testing.fake() if mode == "fake" else testing.inline():
        try:
            yield testing
        finally:
            testing.unfreeze()
            testing.clear_all()


@pytest.fixture
def cogworker_fake(cogworker_app: App) -> Iterator[Testing]:
    """``cogworker_app`` in fake mode for this test; yields ``app.testing``."""
    yield from _in_mode(cogworker_app, "fake")


@pytest.fixture
def cogworker_inline(cogworker_app: App) -> Iterator[Testing]:
    """``cogworker_app`` in inline mode for this test; yields ``app.testing``."""
    yield from _in_mode(cogworker_app, "inline")


@pytest.fixture(scope="session")
def cogworker_redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a private redis-server for this test session (no persistence)."""
    from cogworker.redis.test_server import session_server

    with session_server(tmp_path_factory.mktemp("cogworker-redis")) as url:
        yield url


@pytest.fixture
def cogworker_namespace(cogworker_redis_url: str) -> Iterator[str]:
    """A key namespace only this test uses; its keys are deleted afterwards."""
    from cogworker.redis.test_server import delete_namespace

    namespace = f"test-{uuid.uuid4().hex[:10]}"
    yield namespace
    delete_namespace(cogworker_redis_url, namespace)


@pytest.fixture
def cogworker_worker(cogworker_app: App, cogworker_redis_url: str,
                     cogworker_namespace: str) -> Iterator[InProcessWorker]:
    """A real worker for ``cogworker_app`` on the test's Redis and namespace."""
    from cogworker.testing.worker import InProcessWorker

    app = cogworker_app
    app.configure(cli={"redis_url": cogworker_redis_url, "namespace": cogworker_namespace})
    try:
        yield InProcessWorker(app)
    finally:
        app.close()
        app.configure()
