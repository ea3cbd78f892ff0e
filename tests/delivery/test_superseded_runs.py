"""A job that keeps its process from beating (one C call holding the GIL past
``orphan_threshold``) is recovered while it still runs; the late acknowledgement of the
superseded run must not reset its orphan counter, so ``max_orphanings`` still ends it."""

from __future__ import annotations

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from delivery.conftest import APP_HEADER, StartAppWorker
from delivery.support import assert_drained
from helpers.workers import Ledger, wait_until
from runtime.support import payload, push_raw, sorted_set_jobs

pytestmark = pytest.mark.slow

GIL_HOG = APP_HEADER + '''
import ctypes

_LIBC = ctypes.PyDLL(None)  # a PyDLL call keeps the GIL: no other thread of the process runs


@app.job(name="Hog")
def hog(rest, seconds):
    record("hog", "Hog", "start")
    time.sleep(rest)  # the process beats on meanwhile
    _LIBC.sleep(seconds)
    record("hog", "Hog", "finish")
'''

REST, HOG = 5, 6
"""Beating for 5 s, then holding the GIL for 6 s (three times orphan_threshold, 2 s): the
run that supersedes the first one is still beating when the first one acks, late."""


def test_a_late_ack_of_a_superseded_run_keeps_the_orphan_count(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker,
) -> None:
    workers = [app_worker(GIL_HOG, redis_url, "-c", "1", max_orphanings=1) for _ in range(2)]
    jid = new_jid()
    push_raw(redis_client, keys, "default", payload("Hog", [REST, HOG], "default", jid))

    # Run 1 freezes its process at 5 s; the other process recovers the job at about 7 s
    # (count 1) and runs it. Run 1 thaws at 11 s and acks late (it holds nothing by then)
    # while run 2 still beats; run 2 freezes at about 12 s, and run 1's process recovers
    # it at about 14 s: count 2 > max_orphanings, so the job goes to dead.
    wait_until(lambda: redis_client.zcard(keys.dead) == 1, 60,
               lambda: "\n---\n".join(worker.output()[-2000:] for worker in workers))
    wait_until(lambda: ledger.count("finish") == 2, 30,
               lambda: "\n---\n".join(worker.output()[-2000:] for worker in workers))
    for worker in workers:
        assert worker.stop() == 0

    assert ledger.count("start") == 2  # max_orphanings + 1 runs, never more
    [(dead, _)] = sorted_set_jobs(redis_client, keys.dead)
    assert (dead["jid"], dead["error_class"]) == (jid, "cogworker.JobOrphanedError")
    assert dead["error_message"].startswith("orphaned more than 1 times")
    assert redis_client.exists(keys.orphanings(jid)) == 0
    assert_drained(redis_client, keys, dead=1)
