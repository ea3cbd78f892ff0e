"""A third-party plugin replaces periodic-locks: the ticker claims through it alone."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from cogworker.app import App
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.middleware import PushContext
from helpers.redis_access import keys_of
from periodic.conftest import MakeApp, MakeTicker
from periodic.support import START, queued
from plugins.fake_site import FakeSite

ACME_CLAIMS = """
    from cogworker.core.markers import hookimpl
    from cogworker.core.periodic_types import ClaimOutcome, ClaimResult

    CALLS = []
    CLAIMED = set()


    @hookimpl
    def cogworker_claim_periodic_slot(app, entry, slot, jid):
        CALLS.append(("claim", entry.job_name, slot, jid))
        if (entry.pjid, slot) in CLAIMED:
            return ClaimResult(ClaimOutcome.LOST)
        CLAIMED.add((entry.pjid, slot))
        return ClaimResult(ClaimOutcome.WON, previous_slot=None)


    @hookimpl
    def cogworker_rollback_periodic_claim(app, entry, slot, previous_slot, jid):
        CALLS.append(("rollback", entry.job_name, slot, jid))
        CLAIMED.discard((entry.pjid, slot))
        return True
"""


@pytest.fixture
def acme_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    """An installed distribution ``acme-cron`` whose plugin ``acme-cron`` records claims."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    site = FakeSite(root)
    site.add_distribution("acme-cron", {"acme-cron": "acme_cron.claims"},
                          {"acme_cron.claims": ACME_CLAIMS})
    yield site
    site.unload()
    importlib.invalidate_caches()


def acme_calls() -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = sys.modules["acme_cron.claims"].CALLS
    return calls


def test_a_replacement_plugin_claims_the_slots_and_the_builtin_stays_out(
    acme_site: FakeSite, make_app: MakeApp, make_ticker: MakeTicker, redis_client: redis.Redis,
) -> None:
    app = make_app(plugins=("no:periodic-locks", "acme-cron"))
    entry = app.periodic("* * * * *", "jobs.Minutely")
    plugin_names = {name for name, _ in app.hooks.plugin_manager.list_name_plugin()}
    assert "acme-cron" in plugin_names
    assert "periodic-locks" not in plugin_names

    ticker = make_ticker(app)
    ticker.tick()
    make_ticker(app).tick()  # a second ticker loses the slot through the plugin

    jobs = queued(app)
    assert [(c[0], c[1], c[2]) for c in acme_calls()] == [
        ("claim", "jobs.Minutely", int(START)), ("claim", "jobs.Minutely", int(START))]
    assert [job["jid"] for job in jobs] == [acme_calls()[0][3]]
    assert not redis_client.exists(keys_of(app).periodic_last_slot(entry.pjid))


def test_a_push_failure_rolls_back_through_the_replacement(
    acme_site: FakeSite, make_app: MakeApp, make_ticker: MakeTicker,
) -> None:
    app = make_app(plugins=("no:periodic-locks", "acme-cron"))
    app.periodic("* * * * *", "jobs.Minutely")
    failed: list[bool] = []

    def fail_once(ctx: PushContext, call_next: Any) -> str | None:
        if not failed:
            failed.append(True)
            raise BrokerUnavailableError("simulated")
        result: str | None = call_next()
        return result

    app.client_middleware.append(fail_once)
    ticker = make_ticker(app)
    ticker.tick()
    ticker.tick()

    assert [c[0] for c in acme_calls()] == ["claim", "rollback", "claim"]
    assert len(queued(app)) == 1


def test_without_any_claim_plugin_the_entry_backs_off_with_a_clear_error(
    make_app: MakeApp, make_ticker: MakeTicker, caplog: pytest.LogCaptureFixture,
) -> None:
    app: App = make_app(plugins=("no:periodic-locks",))
    app.periodic("* * * * *", "jobs.Minutely")
    make_ticker(app).tick()
    assert queued(app) == []
    assert "no active plugin claims cron slots" in caplog.text
