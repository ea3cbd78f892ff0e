"""Bytes that are not a job, pushed straight onto a queue, are buried in dead with their
content, and the jobs behind them still run."""

from __future__ import annotations

import pytest
import redis

from cogworker.core.payload import new_jid, raw_payload_bytes
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, wait_until
from runtime.support import WORK_JOBS, StartWorker, payload, push_raw, sorted_set_jobs

pytestmark = pytest.mark.slow

GARBAGE = {
    b"\xff\xfe definitely not JSON": "not UTF-8",
    b"[1, 2, 3]": "not a JSON object but a list",
    b'{"class": "Work", "args": [1], "jid": "abc"}': "the payload has no queue name",
}


@pytest.mark.parametrize("fetch_args", [(), ("--plugin", "basic")], ids=["reliable", "basic"])
def test_garbage_is_buried_in_dead_and_the_jobs_behind_it_run(
    start_worker: StartWorker, ledger: Ledger, redis_client: redis.Redis, keys: KeySchema,
    fetch_args: tuple[str, ...],
) -> None:
    good = [new_jid() for _ in range(3)]
    # Oldest first: garbage, then the good jobs behind it.
    push_raw(redis_client, keys, "default", *GARBAGE,
             *(payload("Work", [n], "default", jid) for n, jid in enumerate(good)))
    worker = start_worker(WORK_JOBS, "-c", "1", *fetch_args)

    wait_until(lambda: ledger.count("ran") == len(good), 20, lambda: worker.output()[-3000:])
    assert worker.stop() == 0
    log = worker.output()

    assert [event.jid for event in ledger.events("ran")] == good
    buried = [entry for entry, _ in sorted_set_jobs(redis_client, keys.dead)]
    # The exact bytes are kept (raw_payload_base64 when they are not UTF-8).
    by_bytes = {raw_payload_bytes(entry): entry for entry in buried}
    assert len(buried) == len(GARBAGE)
    assert set(by_bytes) == set(GARBAGE)
    for raw, reason in GARBAGE.items():
        entry = by_bytes[raw]
        assert entry["class"] == "(unparseable)"
        assert entry["queue"] == "default"
        assert entry["retry"] is False
        assert entry["error_class"] == "PayloadError"
        assert entry["error_message"].startswith(reason), entry
    assert log.count("unparseable job on queue default moved to dead") == len(GARBAGE)
    assert redis_client.llen(keys.queue("default")) == 0
    assert redis_client.get(keys.stats_failed) == b"3"
