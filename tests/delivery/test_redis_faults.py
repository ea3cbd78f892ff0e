"""Redis misbehaving under a running fleet: restarted (AOF), its script cache flushed, its
client connections killed, and a server that does not know LMOVE/BLMOVE. No job is lost,
none runs twice, none fails because of it, and processing resumes unaided (DESIGN §3;
gold-standard §3.4 S9, S10, S12, invariants I1, I2, I6)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import pytest
import redis

from cogworker.api import Queue
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from delivery.conftest import MakeClient, MakeFleet
from delivery.support import (
    Fleet,
    assert_drained,
    assert_each_ran_once,
    enqueue_work,
    executions,
    finished_jids,
    inprogress_entries,
    wait_all_finished,
)
from helpers.redis_servers import RedisServerFactory
from helpers.workers import Ledger, wait_until

pytestmark = pytest.mark.slow

JOBS = 600
JOB_SECONDS = 0.04
# No process may look dead during a short outage: the threshold is longer than any outage
# here (as the 300 s default is longer than a fail-over), the other intervals stay short.
OUTAGE_SAFE = {"concurrency": 5, "heartbeat_ttl": 5.0, "orphan_threshold": 10.0}
Fault = tuple[int, Callable[[], None]]
"""Inject the fault once this many jobs have finished."""


def _drain_through(fleet: Fleet, ledger: Ledger, jids: Sequence[str], faults: Sequence[Fault],
                   ) -> None:
    pending = sorted(faults, key=lambda fault: fault[0])
    deadline = time.monotonic() + 90
    while pending:
        assert time.monotonic() < deadline, fleet.log_tails()
        if len(finished_jids(ledger)) >= pending[0][0]:
            pending.pop(0)[1]()
        time.sleep(0.02)
    wait_all_finished(ledger, jids, 90, fleet)


def _run_under_faults(server: RedisServer, ledger: Ledger, fleet_factory: MakeFleet,
                      make_client: MakeClient, keys: KeySchema,
                      faults: Callable[[redis.Redis], Sequence[Fault]]) -> Fleet:
    """Two workers drain :data:`JOBS` jobs through ``faults``; every job must run once."""
    client = redis.Redis.from_url(server.url)
    try:
        fleet = fleet_factory(server.url, **OUTAGE_SAFE)
        fleet.start()
        fleet.start()
        jids = enqueue_work(make_client(server.url), [JOB_SECONDS] * JOBS)
        _drain_through(fleet, ledger, jids, faults(client))
        fleet.stop_all()
        assert_each_ran_once(executions(ledger), jids)
        assert_drained(client, keys)
    finally:
        client.close()
    return fleet


@pytest.mark.parametrize("down_for", [1.0, 4.0], ids=["down-1s", "down-4s"])
def test_a_redis_restart_with_aof_loses_nothing_and_fails_no_job(
    redis_server_factory: RedisServerFactory, ledger: Ledger, fleet_factory: MakeFleet,
    make_client: MakeClient, keys: KeySchema, down_for: float,
) -> None:
    """1 s is inside the client's reconnect retries; 4 s is not, so fetches, acks and
    beats fail and are finished later."""
    server = redis_server_factory()  # appendonly yes, appendfsync everysec

    def restart() -> None:
        server.stop()  # SHUTDOWN: the AOF is flushed
        time.sleep(down_for)
        server.start()

    fleet = _run_under_faults(server, ledger, fleet_factory, make_client, keys,
                              lambda client: [(JOBS // 4, restart)])
    logs = "".join(worker.output() for worker in fleet.workers)
    assert "Redis unavailable" in logs  # the outage really reached the workers
    assert "Redis available again" in logs


def test_a_script_flush_is_transparent(
    redis_server_factory: RedisServerFactory, ledger: Ledger, fleet_factory: MakeFleet,
    make_client: MakeClient, keys: KeySchema,
) -> None:
    server = redis_server_factory()

    def flushes(client: redis.Redis) -> list[Fault]:
        def flush() -> None:
            client.script_flush()
        return [(JOBS // 4, flush), (JOBS // 2, flush)]

    fleet = _run_under_faults(server, ledger, fleet_factory, make_client, keys, flushes)
    logs = "".join(worker.output() for worker in fleet.workers)
    assert "ERROR" not in logs and "NOSCRIPT" not in logs


def test_killed_client_connections_heal_by_themselves(
    redis_server_factory: RedisServerFactory, ledger: Ledger, fleet_factory: MakeFleet,
    make_client: MakeClient, keys: KeySchema,
) -> None:
    server = redis_server_factory()

    def kill_clients(client: redis.Redis, kind: str) -> Callable[[], None]:
        def kill() -> None:  # the test's own connection is spared (SKIPME yes)
            assert int(client.client_kill_filter(_type=kind)) > 0
        return kill

    _run_under_faults(server, ledger, fleet_factory, make_client, keys, lambda client: [
        (JOBS // 5, kill_clients(client, "normal")),
        (2 * JOBS // 5, kill_clients(client, "pubsub")),
        (3 * JOBS // 5, kill_clients(client, "normal")),
    ])


RENAMED = ("--rename-command", "LMOVE", "", "--rename-command", "BLMOVE", "")


def test_a_server_without_lmove_switches_to_basic_once_and_keeps_processing(
    redis_server_factory: RedisServerFactory, ledger: Ledger, fleet_factory: MakeFleet,
    make_client: MakeClient, keys: KeySchema,
) -> None:
    server = redis_server_factory(extra_args=RENAMED)
    fleet = fleet_factory(server.url, concurrency=4)
    client = make_client(server.url)
    jids = enqueue_work(client, [0.02] * 40)
    worker = fleet.start()
    wait_all_finished(ledger, jids, 60, fleet)
    jids += enqueue_work(client, [0.02] * 40)  # after the switch too
    wait_all_finished(ledger, jids, 60, fleet)
    fleet.stop_all()

    log = worker.output()
    assert "fetch=reliable" in log  # it started reliable (Redis 6.2 passes the version check)
    assert log.count("falling back to basic") == 1, log
    assert_each_ran_once(executions(ledger), jids)
    with redis.Redis.from_url(server.url) as check:
        assert_drained(check, keys)


def test_jobs_fetched_reliably_before_a_fallback_are_still_settled(
    redis_server_factory: RedisServerFactory, ledger: Ledger, fleet_factory: MakeFleet,
    make_client: MakeClient, keys: KeySchema,
) -> None:
    """Several queues fetch with one script (no LMOVE), so jobs are on the in-progress list
    when pausing a queue leaves one queue, whose blocking wait (BLMOVE) is unknown."""
    server = redis_server_factory(extra_args=RENAMED)
    fleet = fleet_factory(server.url, concurrency=4, queues="default,urgent")
    client = make_client(server.url)
    first = fleet.start()
    held = [client.push({"class": "Gated", "args": [tag]}) for tag in ("a", "b")]
    wait_until(lambda: len(executions(ledger)) == 2, 30, first.output)
    Queue(client, "urgent").pause()
    first.wait_for_output("falling back to basic")
    fleet.open_gate(first)
    wait_all_finished(ledger, [jid for jid in held if jid], 30, fleet)
    fleet.stop_all()

    with redis.Redis.from_url(server.url) as check:
        left = inprogress_entries(check, keys)
    # A successor's orphan recovery would run whatever is left there a second time.
    assert left == {}, f"jobs that ran are still in progress: {left}"
