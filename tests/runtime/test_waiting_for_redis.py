"""A worker started while Redis is down waits for it (its first heartbeat is retried) and
fetches nothing until then; a TERM during that wait, or while the app is still being
imported, ends it cleanly."""

from __future__ import annotations

import signal
import textwrap

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.redis_servers import RedisServerFactory
from helpers.workers import Ledger, wait_until
from runtime.support import (
    STARTED,
    WORK_JOBS,
    StartWorker,
    jids_on,
    payload,
    push_raw,
    wait_exit,
    wait_started,
)

pytestmark = pytest.mark.slow


def test_a_worker_waits_for_redis_and_a_term_meanwhile_exits_zero(
    start_worker: StartWorker, redis_server_factory: RedisServerFactory, ledger: Ledger,
    keys: KeySchema,
) -> None:
    server = redis_server_factory()  # AOF on: the queued job survives the stop
    client = redis.Redis.from_url(server.url)
    jid = new_jid()
    push_raw(client, keys, "default", payload("Work", [1], "default", jid))
    client.close()
    server.stop()

    early = start_worker(WORK_JOBS, url=server.url, wait=False)
    early.wait_for_output("heartbeat: Redis unavailable", 20)
    early.signal(signal.SIGTERM)
    assert wait_exit(early, 20) == 0
    assert "Received stop signal before startup completed" in early.output()
    assert STARTED not in early.output()

    waiting = start_worker(WORK_JOBS, url=server.url, wait=False)
    waiting.wait_for_output("heartbeat: Redis unavailable", 20)
    server.start()  # the worker notices by itself
    wait_started(waiting)
    wait_until(lambda: ledger.count("ran") == 1, 20, waiting.output)
    assert waiting.stop() == 0
    assert [event.jid for event in ledger.events("ran")] == [jid]
    assert "heartbeat: Redis available again" in waiting.output()
    client = redis.Redis.from_url(server.url)
    assert jids_on(client, keys.queue("default")) == []
    client.close()


SLOW_IMPORT = textwrap.dedent("""
    import sys
    import time

    print("importing the app", file=sys.stderr, flush=True)
    time.sleep(2)  # a large project's imports
""")


def test_a_term_while_the_app_is_still_being_imported_exits_zero_having_fetched_nothing(
    start_worker: StartWorker, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
) -> None:
    jid = new_jid()
    push_raw(redis_client, keys, "default", payload("Work", [1], "default", jid))
    worker = start_worker(SLOW_IMPORT + WORK_JOBS, wait=False)
    worker.wait_for_output("importing the app", 20)
    worker.signal(signal.SIGTERM)
    assert wait_exit(worker, 20) == 0
    assert "Received stop signal before startup completed" in worker.output()
    assert STARTED not in worker.output()
    assert ledger.count("ran") == 0
    assert jids_on(redis_client, keys.queue("default")) == [jid]
