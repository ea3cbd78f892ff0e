"""A fetch whose reply never arrives may still have moved jobs onto the worker's in-progress
list (a reply lost on the way, or a command Redis ran as it woke from a SIGSTOP). The worker
reconciles its list soon after the fetch works again, not two orphan checks later."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from delivery.conftest import APP_HEADER, StartAppWorker
from delivery.support import assert_drained, identity_of
from helpers.proxy import ForwardingProxy
from helpers.workers import Ledger, wait_until
from runtime.support import payload, push_raw

pytestmark = pytest.mark.slow

WORK = APP_HEADER + '''

@app.job(name="Work")
def work(tag):
    record(tag, "Work", "ran")
'''

_NIL_REPLIES = (b"$-1", b"*-1", b"_")


class LoseOneFetchedJob(ForwardingProxy):
    """Relays everything, except the first reply to a BLMOVE that carries a job: that
    reply is dropped and the client's connection cut, after Redis moved the job."""

    def __init__(self, upstream_port: int) -> None:
        self.blocking = threading.Event()  # a BLMOVE is waiting in Redis
        self.cut = threading.Event()
        super().__init__(upstream_port)

    def from_client(self, link: SimpleNamespace, data: bytes) -> bool:
        if b"BLMOVE" in data:
            link.blmove = True
            self.blocking.set()
        return True

    def from_redis(self, link: SimpleNamespace, data: bytes) -> bool:
        if not getattr(link, "blmove", False):
            return True
        link.blmove = False
        if self.cut.is_set() or data.startswith(_NIL_REPLIES):
            return True
        self.cut.set()
        return False


def test_jobs_a_lost_fetch_reply_left_in_progress_run_soon_after(
    redis_server: RedisServer, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker,
) -> None:
    assert redis_server.port is not None
    with LoseOneFetchedJob(redis_server.port) as proxy:
        # orphan checks a minute apart, as by default: the old path waited for two of them
        worker = app_worker(WORK, proxy.url, "-c", "1", orphan_check_interval=60.0)
        identity = identity_of(worker)
        wait_until(proxy.blocking.is_set, 20, lambda: worker.output()[-3000:])
        jid = new_jid()
        push_raw(redis_client, keys, "default", payload("Work", ["lost"], "default", jid))
        wait_until(proxy.cut.is_set, 20, lambda: worker.output()[-3000:])

        wait_until(lambda: ledger.count("ran") == 1, 30, lambda: worker.output()[-3000:])
        assert worker.stop() == 0

    assert [event.jid for event in ledger.events("ran")] == ["lost"]
    log = worker.output()
    assert "fetch: Redis unavailable" in log
    assert f"requeued stray in-progress job jid={jid}" in log
    assert redis_client.llen(keys.inprogress(identity)) == 0
    assert_drained(redis_client, keys)

