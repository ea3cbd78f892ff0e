"""The periodic-locks plugin on a real Redis: claim, rollback, retake, touch, release."""

from __future__ import annotations

import threading
from importlib import resources

import pytest
import redis

from cogworker.app import App
from cogworker.core.broker import running_lock_name
from cogworker.core.errors import ConfigurationError
from cogworker.core.payload import Payload, new_jid
from cogworker.core.periodic_types import ClaimOutcome, ClaimResult, PeriodicEntry
from cogworker.core.settings import Settings
from cogworker.plugins import periodic_locks
from cogworker.plugins.periodic_locks import (
    active_ttl,
    claim_slot,
    deferred_releases,
    queued_ttl,
    retake_lock,
    rollback_claim,
)
from cogworker.redis.scripts import declared_key_count, script_source
from cogworker.redis.server import RedisServer
from cogworker.redis.server_process import free_port
from helpers.redis_access import client_of, keys_of
from periodic.conftest import MakeApp
from periodic.support import text

SLOT = 1_714_557_600
PLAIN = PeriodicEntry(cron="* * * * *", job_name="jobs.Plain")
EXCLUSIVE = PeriodicEntry(cron="* * * * *", job_name="jobs.Exclusive", unique="until_executed")


class Worker:
    """A WorkerHandle over an app with a fixed list of performing jobs."""

    def __init__(self, app: App, performing: list[Payload]) -> None:
        self.app = app
        self.identity = app.identity
        self.performing = performing

    @property
    def settings(self) -> Settings:
        return self.app.settings

    def performing_jobs(self) -> list[Payload]:
        return list(self.performing)


def job_of(entry: PeriodicEntry, jid: str, slot: int = SLOT) -> Payload:
    job: Payload = {"class": entry.job_name, "args": [], "jid": jid, "queue": "default",
                    "periodic_pjid": entry.pjid, "periodic_slot": slot}
    if entry.until_executed:
        job["periodic_until_executed"] = True
    return job


# scripts ---------------------------------------------------------------------------------


def test_every_periodic_script_declares_the_keys_its_caller_passes() -> None:
    names = sorted(item.name for item in (resources.files("cogworker.redis") / "lua").iterdir()
                   if item.name.startswith("periodic_") or item.name == "retake_lock.lua")
    assert names == ["periodic_claim.lua", "periodic_rollback.lua", "retake_lock.lua"]
    counts = {name: declared_key_count(script_source("cogworker.redis", name[:-4]))
              for name in names}
    assert counts == {"periodic_claim.lua": 3, "retake_lock.lua": 1,
                      "periodic_rollback.lua": 3}


# claim -----------------------------------------------------------------------------------


def test_claim_wins_once_then_loses_and_records_the_previous_slot(
    app: App, redis_client: redis.Redis,
) -> None:
    first = claim_slot(app, PLAIN, SLOT, new_jid())
    again = claim_slot(app, PLAIN, SLOT, new_jid())
    older = claim_slot(app, PLAIN, SLOT - 60, new_jid())
    later = claim_slot(app, PLAIN, SLOT + 60, new_jid())

    assert first == ClaimResult(ClaimOutcome.WON, None)
    assert again.outcome is ClaimOutcome.LOST
    assert older.outcome is ClaimOutcome.LOST
    assert later == ClaimResult(ClaimOutcome.WON, SLOT)
    assert text(redis_client, keys_of(app).periodic_last_slot(PLAIN.pjid)) == str(SLOT + 60)
    assert redis_client.ttl(keys_of(app).periodic_slot_lock(PLAIN.pjid, SLOT)) <= 20
    assert not redis_client.exists(keys_of(app).periodic_running(PLAIN.pjid))  # plain: no lock


def test_the_slot_lock_settles_a_race_on_the_same_last_slot(
    app: App, redis_client: redis.Redis,
) -> None:
    redis_client.set(keys_of(app).periodic_slot_lock(PLAIN.pjid, SLOT), "1")
    assert claim_slot(app, PLAIN, SLOT, new_jid()).outcome is ClaimOutcome.LOST
    assert not redis_client.exists(keys_of(app).periodic_last_slot(PLAIN.pjid))


def test_the_queued_lock_ttl_option_wins_over_its_alias(make_app: MakeApp) -> None:
    app = make_app(unique_lock_ttl=100.2,
                   plugin_options={"periodic-locks": {"queued_lock_ttl": 33.5}})
    assert queued_ttl(app) == 34


def test_a_bad_periodic_locks_option_stops_the_start(make_app: MakeApp) -> None:
    app = make_app(plugin_options={"periodic-locks": {"queued_lock_tll": 33}})
    with pytest.raises(ConfigurationError, match="did you mean 'queued_lock_ttl'"):
        _ = app.hooks


def test_until_executed_claim_writes_the_running_lock_and_then_blocks(
    make_app: MakeApp, redis_client: redis.Redis,
) -> None:
    app = make_app(unique_lock_ttl=100.2)
    jid = new_jid()
    assert claim_slot(app, EXCLUSIVE, SLOT, jid).outcome is ClaimOutcome.WON
    running = keys_of(app).periodic_running(EXCLUSIVE.pjid)
    assert text(redis_client, running) == jid
    assert 0 < redis_client.ttl(running) <= 101  # ceil(unique_lock_ttl)
    assert queued_ttl(app) == 101

    blocked = claim_slot(app, EXCLUSIVE, SLOT + 60, new_jid())
    assert blocked == ClaimResult(ClaimOutcome.BLOCKED)
    assert text(redis_client, keys_of(app).periodic_last_slot(EXCLUSIVE.pjid)) == str(SLOT)


def test_of_many_claimers_in_threads_exactly_one_wins_each_slot(make_app: MakeApp) -> None:
    apps = [make_app() for _ in range(6)]
    slots = [SLOT + second for second in range(40)]
    wins: list[tuple[int, int]] = []
    guard = threading.Lock()
    start = threading.Barrier(len(apps))

    def claimer(index: int, app: App) -> None:
        start.wait()
        for slot in slots:
            if claim_slot(app, PLAIN, slot, new_jid()).outcome is ClaimOutcome.WON:
                with guard:
                    wins.append((slot, index))

    threads = [threading.Thread(target=claimer, args=(i, a)) for i, a in enumerate(apps)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    won_slots = sorted(slot for slot, _ in wins)
    assert len(won_slots) == len(set(won_slots))  # never twice
    assert won_slots[-1] == slots[-1]


def test_claims_survive_a_flushed_script_cache(app: App, redis_client: redis.Redis) -> None:
    assert claim_slot(app, PLAIN, SLOT, new_jid()).outcome is ClaimOutcome.WON
    redis_client.script_flush()
    assert claim_slot(app, PLAIN, SLOT + 1, new_jid()).outcome is ClaimOutcome.WON


# rollback --------------------------------------------------------------------------------


def test_rollback_restores_the_previous_slot_and_removes_this_claims_locks(
    app: App, redis_client: redis.Redis,
) -> None:
    claim_slot(app, EXCLUSIVE, SLOT, "first")
    redis_client.delete(keys_of(app).periodic_running(EXCLUSIVE.pjid))
    jid = new_jid()
    won = claim_slot(app, EXCLUSIVE, SLOT + 60, jid)
    assert won.previous_slot == SLOT

    assert rollback_claim(app, EXCLUSIVE, SLOT + 60, won.previous_slot, jid) is True

    assert text(redis_client, keys_of(app).periodic_last_slot(EXCLUSIVE.pjid)) == str(SLOT)
    assert not redis_client.exists(keys_of(app).periodic_slot_lock(EXCLUSIVE.pjid, SLOT + 60))
    assert not redis_client.exists(keys_of(app).periodic_running(EXCLUSIVE.pjid))
    assert claim_slot(app, EXCLUSIVE, SLOT + 60, new_jid()).outcome is ClaimOutcome.WON


def test_rollback_without_a_previous_slot_leaves_slot_minus_one(
    app: App, redis_client: redis.Redis,
) -> None:
    won = claim_slot(app, PLAIN, SLOT, "jid-1")
    rollback_claim(app, PLAIN, SLOT, won.previous_slot, "jid-1")
    assert text(redis_client, keys_of(app).periodic_last_slot(PLAIN.pjid)) == str(SLOT - 1)


def test_rollback_never_moves_back_past_a_later_claim_nor_frees_anothers_lock(
    app: App, redis_client: redis.Redis,
) -> None:
    won = claim_slot(app, PLAIN, SLOT, "old")
    claim_slot(app, PLAIN, SLOT + 60, "newer")
    running = keys_of(app).periodic_running(PLAIN.pjid)
    redis_client.set(running, "newer")

    assert rollback_claim(app, PLAIN, SLOT, won.previous_slot, "old") is False

    assert text(redis_client, keys_of(app).periodic_last_slot(PLAIN.pjid)) == str(SLOT + 60)
    assert text(redis_client, running) == "newer"


# running lock upkeep ---------------------------------------------------------------------


def test_retake_sets_a_missing_lock_extends_its_own_and_leaves_a_newer_owners(
    app: App, redis_client: redis.Redis,
) -> None:
    running = keys_of(app).periodic_running(EXCLUSIVE.pjid)
    assert retake_lock(app, job_of(EXCLUSIVE, "mine"), 500) is True
    assert text(redis_client, running) == "mine"
    assert 490 < redis_client.ttl(running) <= 500

    redis_client.expire(running, 5)
    assert retake_lock(app, job_of(EXCLUSIVE, "mine"), 500) is True
    assert redis_client.ttl(running) > 490

    redis_client.set(running, "newer", ex=30)
    assert retake_lock(app, job_of(EXCLUSIVE, "mine"), 500) is False
    assert text(redis_client, running) == "newer"
    assert redis_client.ttl(running) <= 30


def test_touch_and_release_hooks_are_owner_checked(app: App, redis_client: redis.Redis) -> None:
    running = keys_of(app).periodic_running(EXCLUSIVE.pjid)
    redis_client.set(running, "owner", ex=1000)

    app.hooks.touch_periodic_lock(app, job_of(EXCLUSIVE, "stranger"), None)
    app.hooks.release_periodic_lock(app, job_of(EXCLUSIVE, "stranger"))
    assert redis_client.ttl(running) > 900
    assert text(redis_client, running) == "owner"

    app.hooks.touch_periodic_lock(app, job_of(EXCLUSIVE, "owner"), None)  # it starts
    assert 0 < redis_client.ttl(running) <= active_ttl(app)
    app.hooks.touch_periodic_lock(app, job_of(EXCLUSIVE, "owner"), 50.0)  # a 50 s retry wait
    assert 50 + queued_ttl(app) - 10 < redis_client.ttl(running) <= 50 + queued_ttl(app)
    app.hooks.release_periodic_lock(app, job_of(EXCLUSIVE, "owner"))
    assert not redis_client.exists(running)


def test_the_heartbeat_keeps_the_locks_of_performing_cron_jobs(
    make_app: MakeApp, redis_client: redis.Redis,
) -> None:
    app = make_app(orphan_threshold=30)
    assert active_ttl(app) == 150
    exclusive_lock = keys_of(app).periodic_running(EXCLUSIVE.pjid)
    plain_lock = keys_of(app).periodic_running(PLAIN.pjid)
    redis_client.set(plain_lock, "plain-jid", ex=5)  # e.g. written by a replacement plugin
    worker = Worker(app, [job_of(EXCLUSIVE, "lost-its-lock"), job_of(PLAIN, "plain-jid"),
                          {"class": "not.periodic", "jid": new_jid()}])

    app.hooks.heartbeat(worker)

    assert text(redis_client, exclusive_lock) == "lost-its-lock"  # re-taken
    assert 140 < redis_client.ttl(exclusive_lock) <= 150
    assert 140 < redis_client.ttl(plain_lock) <= 150  # touched


def test_a_release_that_fails_while_redis_is_away_is_retried_after_a_heartbeat(
    make_app: MakeApp, readonly_server: RedisServer,
) -> None:
    app = make_app(url=readonly_server.url)
    job = job_of(EXCLUSIVE, "finished")
    client = client_of(app)
    client.replicaof("NO", "ONE")
    running = keys_of(app).periodic_running(EXCLUSIVE.pjid)
    client.set(running, "finished")
    client.replicaof("127.0.0.1", free_port())

    app.hooks.release_periodic_lock(app, job)  # READONLY: unavailable

    assert len(deferred_releases(app)) == 1
    app.hooks.heartbeat(Worker(app, []))
    assert len(deferred_releases(app)) == 1  # still unavailable: kept

    client.replicaof("NO", "ONE")
    app.hooks.heartbeat(Worker(app, []))
    assert len(deferred_releases(app)) == 0
    assert not client.exists(running)


def test_shutdown_gives_deferred_releases_a_last_try(
    app: App, redis_client: redis.Redis,
) -> None:
    running = keys_of(app).periodic_running(EXCLUSIVE.pjid)
    redis_client.set(running, "done")
    deferred_releases(app).add(running_lock_name(EXCLUSIVE.pjid), "done")
    periodic_locks.cogworker_shutdown(Worker(app, []))
    assert not redis_client.exists(running)


@pytest.mark.parametrize("job", [{"class": "x"}, {"periodic_pjid": "", "jid": "j"},
                                 {"periodic_pjid": "p", "jid": 5}])
def test_lock_hooks_ignore_payloads_without_a_usable_pjid_and_jid(
    app: App, job: Payload,
) -> None:
    assert retake_lock(app, job, 10) is False
    app.hooks.release_periodic_lock(app, job)
    assert len(deferred_releases(app)) == 0
