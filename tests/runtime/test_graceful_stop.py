"""SIGTERM while slow jobs run: the worker gives up waiting after ``-t``, puts them back at
the head of their queue and exits 0, with nothing left in progress."""

from __future__ import annotations

import signal

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, wait_until
from runtime.support import (
    WORK_JOBS,
    StartWorker,
    identity_of,
    jids_on,
    payload,
    push_raw,
    wait_exit,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("fetch_args", [(), ("--plugin", "basic")], ids=["reliable", "basic"])
def test_term_requeues_unfinished_jobs_at_the_head_and_exits_zero(
    start_worker: StartWorker, ledger: Ledger, redis_client: redis.Redis, keys: KeySchema,
    fetch_args: tuple[str, ...],
) -> None:
    jids = [new_jid() for _ in range(4)]
    # Pushed oldest first: jids[0] and jids[1] are fetched by the two processor threads,
    # jids[2] and jids[3] wait behind them.
    for jid in jids:
        push_raw(redis_client, keys, "default", payload("Slow", [10], "default", jid))
    worker = start_worker(WORK_JOBS, "-c", "2", "-t", "1", *fetch_args)
    identity = identity_of(worker)
    wait_until(lambda: ledger.count("start") == 2, 20, worker.output)

    worker.signal(signal.SIGTERM)
    status = wait_exit(worker, 20)  # the jobs would need 10 s more; -t 1 cuts it short

    log = worker.output()
    assert status == 0, log[-3000:]
    assert ledger.count("done") == 0, log[-3000:]
    assert sorted(event.jid for event in ledger.events("start")) == sorted(jids[:2])
    on_queue = jids_on(redis_client, keys.queue("default"))
    # The interrupted jobs are back where the next fetch pops (the right end), ahead of
    # the two that never started; nothing is lost or duplicated.
    assert on_queue[:2] == [jids[3], jids[2]]
    assert sorted(on_queue[2:]) == sorted(jids[:2])
    if not fetch_args:  # reliable: the earliest fetched is the first to run again
        assert on_queue[2:] == [jids[1], jids[0]]
    assert "requeued 2 job(s) unfinished at shutdown" in log
    assert redis_client.exists(keys.inprogress(identity), keys.workers(identity),
                               keys.process(identity)) == 0
    assert not redis_client.sismember(keys.processes, identity)


def test_a_draining_worker_stops_listening_for_remote_control_at_once(
    start_worker: StartWorker, ledger: Ledger, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "default", payload("Slow", [5], "default", new_jid()))
    worker = start_worker(WORK_JOBS, "-c", "1", "-t", "30")
    channel = keys.signal(identity_of(worker))

    def subscribers() -> int:
        return int(dict(redis_client.pubsub_numsub(channel))[channel.encode()])

    wait_until(lambda: ledger.count("start") == 1 and subscribers() == 1, 20, worker.output)
    worker.signal(signal.SIGTERM)
    # it is already leaving, so it obeys no more orders: the subscription ends as the
    # drain begins, not after it (the job still has seconds to run)
    wait_until(lambda: subscribers() == 0, 20, worker.output)
    assert ledger.count("done") == 0, worker.output()[-3000:]
    assert redis_client.exists(keys.process(identity_of(worker))) == 1  # live meanwhile

    assert wait_exit(worker, 30) == 0, worker.output()[-3000:]
    assert ledger.count("done") == 1
