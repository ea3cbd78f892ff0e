"""``cogworker ctl quiet|resume|stop IDENTITY|--all`` against real worker processes."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable

import pytest
import redis

from cogworker.api import ProcessSet
from cogworker.app import App
from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, wait_until
from runtime.support import (
    WORK_JOBS,
    StartWorker,
    cogworker_cli,
    identity_of,
    payload,
    push_raw,
    wait_exit,
)

pytestmark = pytest.mark.slow

QUIET_OBSERVED = 1.5  # seconds a quiet worker is watched: several fetch rounds (0.5 s each)


Ctl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def ctl(redis_url: str, namespace: str) -> Ctl:
    """``ctl("quiet", IDENTITY)``: ``cogworker ctl ...`` in a fresh process on this Redis."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return cogworker_cli("ctl", *args, "--redis-url", redis_url, "--namespace", namespace)

    return run


def listening(client: redis.Redis, keys: KeySchema, identity: str) -> bool:
    """Whether the process's remote-control subscription is live (messages now arrive)."""
    [(_, count)] = client.pubsub_numsub(keys.signal(identity))
    return bool(count)


def is_quiet(app: App, identity: str) -> bool:
    process = ProcessSet(app).get(identity)
    return process is not None and process.is_quiet


def test_quiet_resume_and_stop_one_process_by_identity(
    start_worker: StartWorker, ctl: Ctl, pusher: App, ledger: Ledger,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    worker = start_worker(WORK_JOBS, "-c", "2")
    identity = identity_of(worker)
    wait_until(lambda: listening(redis_client, keys, identity), 10, worker.output)
    [info] = json.loads(ctl("list", "--json").stdout)
    assert (info["identity"], info["pid"], info["concurrency"], info["queues"],
            info["busy"], info["quiet"]) == (identity, worker.pid, 2, ["default"], 0, False)
    assert info["hostname"] == identity.rsplit(":", 2)[0]
    assert info["started_at"] > 0 and info["rss_kb"] > 0

    quiet = ctl("quiet", identity)
    assert (quiet.returncode, quiet.stdout.strip()) == (0, "sent quiet to 1 process"), quiet
    wait_until(lambda: is_quiet(pusher, identity), 10, worker.output)
    listed = json.loads(ctl("list", "--json").stdout)
    assert [(p["identity"], p["quiet"]) for p in listed] == [(identity, True)]
    jid = new_jid()
    push_raw(redis_client, keys, "default", payload("Work", [1], "default", jid))
    time.sleep(QUIET_OBSERVED)  # a quiet worker fetches nothing, however long we look
    assert ledger.count("ran") == 0
    assert redis_client.llen(keys.queue("default")) == 1

    resume = ctl("resume", identity)
    assert (resume.returncode, resume.stdout.strip()) == (0, "sent resume to 1 process")
    wait_until(lambda: ledger.count("ran") == 1, 10, worker.output)
    assert ledger.events("ran")[0].jid == jid
    wait_until(lambda: not is_quiet(pusher, identity), 10, worker.output)

    stop = ctl("stop", identity)
    assert (stop.returncode, stop.stdout.strip()) == (0, "sent stop to 1 process")
    assert wait_exit(worker, 20) == 0
    log = worker.output()
    for message in ("quiet", "resume", "stop"):
        assert f"Received remote {message} signal, identity={identity}" in log
    assert ProcessSet(pusher).get(identity) is None
    assert ctl("list").stdout.strip() == "no live processes"
    gone = ctl("stop", identity)
    assert gone.returncode == 1
    assert f"no live process with identity {identity!r}" in gone.stderr


def test_all_reaches_every_live_process(
    start_worker: StartWorker, ctl: Ctl, pusher: App, redis_client: redis.Redis,
    keys: KeySchema,
) -> None:
    workers = [start_worker(WORK_JOBS, "-c", "1") for _ in range(2)]
    identities = sorted(identity_of(worker) for worker in workers)
    wait_until(lambda: all(listening(redis_client, keys, i) for i in identities), 10)

    quiet = json.loads(ctl("quiet", "--all", "--json").stdout)
    assert quiet == {"signal": "quiet", "signalled": 2, "processes": quiet["processes"],
                     "not_listening": [], "pending": []}
    assert sorted(quiet["processes"]) == identities
    assert all(is_quiet(pusher, i) for i in identities)  # reported before ctl returned

    resume = ctl("resume", "--all")
    assert resume.stdout.strip() == "sent resume to 2 processes"
    assert not any(is_quiet(pusher, i) for i in identities)

    stop = ctl("stop", "--all")
    assert stop.stdout.strip() == "sent stop to 2 processes"
    assert [wait_exit(worker, 20) for worker in workers] == [0, 0]
    assert ProcessSet(pusher).size() == 0
    assert json.loads(ctl("list", "--json").stdout) == []
