"""Fixtures for the delivery-contract tests: a ledger, fleets of real workers, a client, and
workers of an app a test writes itself."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

import cogworker
from delivery.support import FAST_RECOVERY, Fleet, client_app, make_fleet, settings_env
from helpers.workers import Ledger, WorkerProcess, write_app

MakeFleet = Callable[..., Fleet]
MakeClient = Callable[[str], cogworker.App]
StartAppWorker = Callable[..., WorkerProcess]
"""``app_worker(body, redis_url, *cli_args, wait=True, **settings)``."""

APP_HEADER = """
import os
import time

import cogworker
from ledger_client import record

app = cogworker.App(redis_url=os.environ["TEST_REDIS_URL"],
                    namespace=os.environ["TEST_NAMESPACE"])
"""
"""The start of an app module for :func:`app_worker`: ``app`` on the test's Redis and
namespace (settings come from ``COGWORKER_*``), ``record`` to write to the ledger."""


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    """The job ledger: a directory of event files, outside every Redis the test runs."""
    return Ledger(tmp_path / "ledger")


@pytest.fixture
def fleet_factory(tmp_path: Path, namespace: str, ledger: Ledger) -> Iterator[MakeFleet]:
    """``fleet_factory(redis_url, **settings)``: a fleet on this test's namespace whose
    workers get :data:`FAST_RECOVERY` overridden by ``settings``; every worker still running
    after the test is killed."""
    fleets: list[Fleet] = []
    numbers = itertools.count()

    def make(redis_url: str, **settings: object) -> Fleet:
        merged: Mapping[str, object] = {**FAST_RECOVERY, **settings}
        fleet = make_fleet(tmp_path / f"fleet-{next(numbers)}", redis_url, namespace, ledger,
                           merged)
        fleets.append(fleet)
        return fleet

    yield make
    for fleet in fleets:
        fleet.close()


@pytest.fixture
def make_client(namespace: str) -> Iterator[MakeClient]:
    """``make_client(redis_url)``: an App that pushes the test jobs; closed after the test."""
    apps: list[cogworker.App] = []

    def make(redis_url: str) -> cogworker.App:
        app = client_app(redis_url, namespace)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


@pytest.fixture
def app_worker(tmp_path: Path, namespace: str, ledger: Ledger) -> Iterator[StartAppWorker]:
    """``app_worker(body, redis_url, *cli_args, wait=True, **settings)``: a ``cogworker run``
    of the app module ``body`` (which starts with :data:`APP_HEADER`) on this test's
    namespace, with :data:`FAST_RECOVERY` overridden by ``settings``; ``wait`` for its
    start-up line. ``$TEST_DIR`` is the test's ``tmp_path``. Every worker still running
    after the test is killed."""
    workers: list[WorkerProcess] = []
    directory = tmp_path / "app"

    def start(body: str, redis_url: str, *args: str, wait: bool = True,
              **settings: object) -> WorkerProcess:
        write_app(directory, body)
        env = {"TEST_REDIS_URL": redis_url, "TEST_NAMESPACE": namespace,
               "COGWORKER_TEST_LEDGER": str(ledger.path), "TEST_DIR": str(tmp_path),
               **settings_env({**FAST_RECOVERY, **settings})}
        worker = WorkerProcess(directory, "jobapp:app", args, env=env).start()
        workers.append(worker)
        if wait:
            worker.wait_for_output(" started identity=")
        return worker

    yield start
    for worker in workers:
        worker.close()
