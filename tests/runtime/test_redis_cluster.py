"""A real three-master Redis Cluster: a worker and a client given a ``redis+cluster://`` URL
naming a node that does not serve the namespace find the one that does, keep every key
there, and follow the namespace's hash slot when it is resharded to another node, or when
its master is killed and a replica takes over."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest
import redis

from cogworker.app import App
from cogworker.redis.cluster import namespace_slot
from helpers.redis_cluster import Cluster, start_cluster
from helpers.redis_servers import RedisServerFactory
from helpers.workers import Ledger, WorkerProcess, wait_until
from runtime.support import WORK_JOBS, StartWorker

pytestmark = pytest.mark.slow


def _stub(*args: Any) -> None:
    """Never run here: the worker process runs the real Work job."""


def push_some(app: App, tag: str) -> list[str]:
    """Two single pushes, a bulk push onto two queues and a job scheduled 1 s ahead."""
    jids = [str(app.push({"class": "Work", "args": [f"{tag}-{n}"], "queue": "default"}))
            for n in range(2)]
    jids += [str(jid) for jid in app.push_bulk("Work", [[f"{tag}-b1"], [f"{tag}-b2"]],
                                               queue="other")]
    jids.append(str(app.push({"class": "Work", "args": [f"{tag}-later"], "queue": "default",
                              "at": time.time() + 1})))
    return jids


def wait_ran(worker: WorkerProcess, ledger: Ledger, jids: Sequence[str]) -> None:
    wait_until(lambda: len(ledger.events("ran")) >= len(jids), 30, worker.output)
    ran = [event.jid for event in ledger.events("ran")]
    assert sorted(ran) == sorted(jids)  # every job, each once


def run_some(cluster: Cluster, home: int, start_worker: StartWorker, ledger: Ledger,
             namespace: str) -> tuple[WorkerProcess, App, list[str]]:
    """A worker and a client whose URL names a node that does not serve the namespace;
    some jobs pushed and run."""
    url = cluster.url((home + 1) % 3)
    worker = start_worker(WORK_JOBS, "-q", "default", "-q", "other", url=url)
    app = App(redis_url=url, namespace=namespace)
    app.job(name="Work")(_stub)
    jids = push_some(app, "before")
    wait_ran(worker, ledger, jids)
    return worker, app, jids


def keys_per_node(cluster: Cluster) -> list[int]:
    counts = []
    for index in range(len(cluster.servers)):
        client: redis.Redis = cluster.client(index)
        counts.append(int(client.dbsize()))
        client.close()
    return counts


@pytest.fixture
def cluster(redis_server_factory: RedisServerFactory) -> Cluster:
    return start_cluster(redis_server_factory)


def test_a_worker_and_a_client_find_the_namespace_slot_and_follow_it_when_resharded(
    cluster: Cluster, start_worker: StartWorker, ledger: Ledger, namespace: str,
) -> None:
    slot = namespace_slot(namespace)
    home = cluster.owner_of(slot)
    worker, app, jids = run_some(cluster, home, start_worker, ledger, namespace)
    assert [count > 0 for count in keys_per_node(cluster)] == [i == home for i in range(3)]

    new_home = (home + 2) % 3
    cluster.move_slot(slot, new_home)
    jids += push_some(app, "after")
    wait_ran(worker, ledger, jids)

    assert [count > 0 for count in keys_per_node(cluster)] == [i == new_home for i in range(3)]
    assert worker.stop() == 0
    assert "Traceback" not in worker.output()
    app.close()


def test_a_worker_and_a_client_follow_a_fail_over_to_the_replica(
    cluster: Cluster, start_worker: StartWorker, redis_server_factory: RedisServerFactory,
    ledger: Ledger, namespace: str,
) -> None:
    slot = namespace_slot(namespace)
    home = cluster.owner_of(slot)
    replica = cluster.add_replica(redis_server_factory, of=home)
    worker, app, jids = run_some(cluster, home, start_worker, ledger, namespace)

    cluster.servers[home].kill()  # SIGKILL; the replica is promoted after the node timeout
    wait_until(lambda: cluster.agreed_owner_of(slot) == replica, 30, worker.output)
    jids += push_some(app, "after")
    wait_ran(worker, ledger, jids)

    assert worker.stop() == 0
    assert "Traceback" not in worker.output()
    app.close()
