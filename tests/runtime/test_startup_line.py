"""The one start-up line of ``cogworker run``: what a deploy checks, and no password."""

from __future__ import annotations

import re

import pytest
import redis

from cogworker import __version__
from cogworker.core.payload import new_jid
from cogworker.core.settings import DEFAULT_PLUGINS
from cogworker.redis.keys import KeySchema
from helpers.redis_servers import RedisServerFactory
from helpers.workers import Ledger, wait_until
from runtime.support import STARTED, WORK_JOBS, StartWorker, payload, push_raw

pytestmark = pytest.mark.slow

PASSWORD = "s3cret-Pa55"


def test_the_startup_line_names_everything_but_the_password(
    start_worker: StartWorker, redis_server_factory: RedisServerFactory, ledger: Ledger,
    keys: KeySchema,
) -> None:
    server = redis_server_factory(appendonly=False, extra_args=("--requirepass", PASSWORD))
    url = f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0"
    client = redis.Redis.from_url(url)
    jid = new_jid()
    push_raw(client, keys, "default", payload("Work", [1], "default", jid))

    worker = start_worker(WORK_JOBS, "-c", "3", "-q", "critical,3", "-q", "default",
                          "--plugin", "basic", url=url)
    wait_until(lambda: ledger.count("ran") == 1, 10, worker.output)  # it works with auth
    assert worker.stop() == 0
    client.close()

    log = worker.output()
    [line] = [line for line in log.splitlines() if STARTED in line]
    identity = line.split(STARTED, 1)[1].split()[0]
    assert re.fullmatch(r".+:\d+:[0-9a-f]{12}", identity)
    assert f"cogworker {__version__} started identity={identity} pid={worker.pid} " in line
    assert identity.split(":")[-2] == str(worker.pid)
    fields = dict(item.split("=", 1) for item in line.split(STARTED, 1)[1].split()[1:])
    assert fields["concurrency"] == "3"
    assert fields["queues"] == "critical:3,default:1"
    assert fields["fetch"] == "basic"
    assert fields["plugins"] == ",".join(sorted({"basic", *DEFAULT_PLUGINS}))
    assert fields["redis"] == f"redis://127.0.0.1:{server.port}/0"
    assert PASSWORD not in log
