"""Workers whose Redis user has an ACL: the one the deploy how-to gives is enough for
everything, and one with no channel at all (Redis 7's default for a new user) still runs
every job, saying once per site what to grant instead of a traceback every second."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, WorkerProcess, wait_until
from runtime.support import (
    WORK_JOBS,
    StartWorker,
    cogworker_cli,
    identity_of,
    payload,
    push_raw,
)

pytestmark = pytest.mark.slow

RETRIES_OBSERVED = 3.0  # seconds: the refused subscriptions are retried every second


def run_jobs_on_two_queues(worker: WorkerProcess, client: redis.Redis, keys: KeySchema,
                           ledger: Ledger) -> None:
    """Push one job on each queue of ``worker`` (waiting on both) and wait until both ran."""
    jids = []
    for queue in ("default", "other"):
        jids.append(new_jid())
        push_raw(client, keys, queue, payload("Work", [queue], queue, jids[-1]))
    wait_until(lambda: ledger.count("ran") == 2, 20, worker.output)
    assert sorted(event.jid for event in ledger.events("ran")) == sorted(jids)


def ctl_quiet(url: str, namespace: str, identity: str) -> tuple[int, str]:
    done = cogworker_cli("ctl", "quiet", identity, "--redis-url", url, "--namespace", namespace)
    return done.returncode, done.stdout + done.stderr


def test_the_acl_of_the_deploy_guide_is_enough_for_jobs_and_remote_control(
    start_worker: StartWorker, acl_user: Callable[..., str], namespace: str,
    redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
) -> None:
    url = acl_user(f"~{namespace}:*", "resetchannels", f"&{namespace}:*",
                   "+@all", "-@dangerous")
    worker = start_worker(WORK_JOBS, "-q", "default", "-q", "other", url=url)

    run_jobs_on_two_queues(worker, redis_client, keys, ledger)
    identity = identity_of(worker)
    wait_until(lambda: ctl_quiet(url, namespace, identity)[1].strip()
               == "sent quiet to 1 process", 10, worker.output)
    worker.wait_for_output(f"Received remote quiet signal, identity={identity}", 10)

    assert worker.stop() == 0
    assert " ERROR: " not in worker.output() and " WARNING: " not in worker.output()


def test_a_user_allowed_no_channel_runs_every_job_and_says_once_what_to_grant(
    start_worker: StartWorker, acl_user: Callable[..., str], namespace: str,
    redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
) -> None:
    url = acl_user(f"~{namespace}:*", "resetchannels", "+@all")
    worker = start_worker(WORK_JOBS, "-q", "default", "-q", "other", url=url)

    run_jobs_on_two_queues(worker, redis_client, keys, ledger)
    worker.wait_for_output("remote control: Redis refused:", 10)
    time.sleep(RETRIES_OBSERVED)  # several more refused attempts, each to be kept quiet
    code, said = ctl_quiet(url, namespace, identity_of(worker))

    assert worker.stop() == 0
    log = worker.output()
    assert log.count("remote control: Redis refused:") == 1
    assert log.count("wake-up subscription failed (BrokerPermissionError") == 1
    assert log.count("cancel: cannot hear or read the cancellations (BrokerPermission") == 1
    # once per subscriber: remote control, the wake-ups, the cancel plugin's announcements
    assert log.count("ACL SETUSER <user> ~cogworker:* ~periodic:* resetchannels") == 3
    assert "Traceback" not in log
    assert code == 1 and "ACL SETUSER" in said, said
