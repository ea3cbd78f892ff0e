"""TSTP and TTIN on a real worker that is running a job (TERM and INT are in
``tests/worker/test_process_signals.py``; this adds what a stuck deploy needs)."""

from __future__ import annotations

import signal
import time

import pytest
import redis

from cogworker.api import ProcessSet, WorkSet
from cogworker.app import App
from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, wait_until
from runtime.support import WORK_JOBS, StartWorker, identity_of, payload, push_raw

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(signal, "SIGTSTP"), reason="POSIX signals"),
]

QUIET_OBSERVED = 1.5  # seconds a quiet worker is watched: several fetch rounds


def test_ttin_dumps_the_running_jobs_stack_and_tstp_lets_it_finish_but_fetches_nothing(
    start_worker: StartWorker, pusher: App, ledger: Ledger, redis_client: redis.Redis,
    keys: KeySchema,
) -> None:
    worker = start_worker(WORK_JOBS, "-c", "2")
    identity = identity_of(worker)
    slow = new_jid()
    push_raw(redis_client, keys, "default", payload("Slow", [3], "default", slow))
    wait_until(lambda: ledger.count("start") == 1, 10, worker.output)
    # While it runs, the workers hash shows it (what `cogworker stats` counts as busy).
    wait_until(lambda: WorkSet(pusher).size() == 1, 10, worker.output)
    [(owner, _tid, work)] = list(WorkSet(pusher))
    assert (owner, work.queue, work.job["jid"]) == (identity, "default", slow)

    worker.signal(signal.SIGTTIN)
    worker.wait_for_output("thread dump:", 10)
    # The dump shows where the running job is (in the app module's perform, sleeping),
    # and every thread: the lines are logged one thread at a time, in no set order, so
    # the test waits for the whole dump rather than reading it once the job's is there.
    expected = ("time.sleep(seconds)", "thread cogworker-processor-", "jobapp.py",
                "thread cogworker-heartbeat")
    wait_until(lambda: all(text in worker.output() for text in expected), 10, worker.output)

    worker.signal(signal.SIGTSTP)
    worker.wait_for_output(f"Received quiet signal, identity={identity}", 10)
    waiting = new_jid()
    push_raw(redis_client, keys, "default", payload("Work", [1], "default", waiting))
    wait_until(lambda: ledger.count("done") == 1, 10, worker.output)  # the running job ends
    wait_until(lambda: getattr(ProcessSet(pusher).get(identity), "is_quiet", False), 10,
               worker.output)  # the heartbeat reports it
    time.sleep(QUIET_OBSERVED)  # a quiet worker fetches nothing, however long we look
    assert ledger.count("ran") == 0
    assert worker.process is not None and worker.process.poll() is None  # still up

    assert worker.stop() == 0
    assert [event.jid for event in ledger.events("done")] == [slow]
    assert redis_client.lrange(keys.queue("default"), 0, -1) == [
        payload("Work", [1], "default", waiting).encode()]
