"""Fixtures for the delivery-contract tests: a ledger, fleets of real workers, a client."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

import cogworker
from delivery.support import FAST_RECOVERY, Fleet, client_app, make_fleet
from helpers.workers import Ledger

MakeFleet = Callable[..., Fleet]
MakeClient = Callable[[str], cogworker.App]


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
