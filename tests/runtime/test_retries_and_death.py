"""Failures end to end through a real worker: the stored retry entry, ``retry_in``
outcomes (seconds, kill, discard, a bad answer), ``retries_exhausted`` and death handlers."""

from __future__ import annotations

import re
import time

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, wait_until
from runtime.support import APP_HEADER, StartWorker, payload, push_raw, sorted_set_jobs

pytestmark = pytest.mark.slow

FAILING_JOBS = APP_HEADER + '''

@app.death_handler
def broken_handler(job, exc):
    raise RuntimeError("this death handler is broken")


@app.death_handler
def note_death(job, exc):
    record(job["jid"], job["class"], "death_handler",
           f"{type(exc).__name__}|{job['retry_count']}")


class Failing(cogworker.Job):
    def perform(self):
        record(self.jid, type(self).__name__, "attempt", self.job.get("retry_count", 0))
        raise ValueError(f"{type(self).__name__} failed")


@app.job(name="Backoff")
class Backoff(Failing):
    """No retry_in: the default backoff."""


@app.job(name="Quick")
class Quick(Failing):
    def retry_in(self, count, exc, job):
        return 0.2

    def retries_exhausted(self, job, exc):
        record(job["jid"], "Quick", "exhausted", type(exc).__name__)


@app.job(name="Killed")
class Killed(Failing):
    def retry_in(self, count, exc, job):
        return "kill"

    def retries_exhausted(self, job, exc):
        record(job["jid"], "Killed", "exhausted", type(exc).__name__)
        raise RuntimeError("retries_exhausted is broken too")


@app.job(name="Discarded")
class Discarded(Failing):
    def retry_in(self, count, exc, job):
        return "discard"

    def retries_exhausted(self, job, exc):
        record(job["jid"], "Discarded", "exhausted")


@app.job(name="Punctual")
class Punctual(cogworker.Job):
    def perform(self):
        record(self.jid, "Punctual", "ran", time.time() - self.job["at"])


@app.job(name="Confused")
class Confused(Failing):
    def retry_in(self, count, exc, job):
        return "soon"
'''


def default_window(count: int) -> tuple[int, int]:
    """The default backoff before retry ``count``: count⁴ + 15 + rand(30)·(count + 1)."""
    return count**4 + 15, count**4 + 15 + 29 * (count + 1)


def test_failures_are_retried_killed_discarded_and_mourned(
    start_worker: StartWorker, ledger: Ledger, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    jid = {name: new_jid() for name in ("Backoff", "Quick", "Killed", "Discarded", "Confused")}
    for name, job_jid in jid.items():
        retry = 2 if name == "Quick" else True
        push_raw(redis_client, keys, "default", payload(name, [], "default", job_jid,
                                                        retry=retry))
    worker = start_worker(FAILING_JOBS, "-c", "3")

    def settled() -> bool:
        return (ledger.count("death_handler") == 2 and redis_client.zcard(keys.retry) == 2
                and any(e.name == "Discarded" for e in ledger.events("attempt")))

    wait_until(settled, 20, lambda: worker.output()[-3000:])
    assert worker.stop() == 0
    log = worker.output()
    attempts = [(e.name, e.detail) for e in ledger.events("attempt")]

    # Quick: retry_in said 0.2 s, retry=2 allows two retries: three attempts, then dead.
    assert [n for name, n in attempts if name == "Quick"] == ["0", "1", "2"]
    # Kill and discard end it at the first failure; nobody asked for a second attempt.
    for name in ("Killed", "Discarded", "Backoff", "Confused"):
        assert [n for who, n in attempts if who == name] == ["0"], name

    retries = {job["class"]: (job, score) for job, score in sorted_set_jobs(redis_client,
                                                                            keys.retry)}
    assert set(retries) == {"Backoff", "Confused"}  # a bad retry_in answer: default backoff
    for name, (job, score) in retries.items():
        assert job["jid"] == jid[name]
        assert job["retry_count"] == 1
        assert job["error_class"] == "ValueError"
        assert job["error_message"] == f"{name} failed"
        low, high = default_window(1)
        assert low <= score - job["failed_at"] <= high, (name, score - job["failed_at"])
        assert re.search(rf"fail: {name} jid={jid[name]} queue=default: ValueError: {name} "
                         r"failed; retry in \d+ s \(attempt 1/26\)", log), log[-3000:]
    assert "retry_in of Confused returned 'soon'" in log

    dead = {job["class"]: job for job, _ in sorted_set_jobs(redis_client, keys.dead)}
    assert set(dead) == {"Quick", "Killed"}
    assert dead["Quick"]["retry_count"] == 3
    assert dead["Killed"]["retry_count"] == 1
    assert f"dead: Quick jid={jid['Quick']} queue=default" in log
    assert "(no retries left, attempt 3/3)" in log
    assert "(killed by retry_in, attempt 1/26)" in log
    assert "discarded (retry_in said so)" in log

    # Each death: retries_exhausted, then every death handler; one failing (the broken
    # handler, Killed's retries_exhausted) neither stops the others nor the job's filing.
    assert sorted((e.name, e.detail) for e in ledger.events("exhausted")) == [
        ("Killed", "ValueError"), ("Quick", "ValueError")]
    assert sorted((e.jid, e.detail) for e in ledger.events("death_handler")) == sorted([
        (jid["Killed"], "ValueError|1"), (jid["Quick"], "ValueError|3")])
    assert log.count("death handler <function broken_handler") == 2
    assert "retries_exhausted failed for jid=" + jid["Killed"] in log
    assert redis_client.get(keys.stats_failed) == b"7"


def test_the_dead_set_is_capped_and_scheduled_jobs_run_when_due(
    start_worker: StartWorker, ledger: Ledger, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    doomed = [new_jid() for _ in range(5)]
    push_raw(redis_client, keys, "default", *(payload("Backoff", [], "default", jid,
                                                      retry=False) for jid in doomed))
    scheduled = new_jid()
    due = time.time() + 1
    redis_client.zadd(keys.schedule, {payload("Punctual", [], "default", scheduled,
                                              at=due): due})
    worker = start_worker(FAILING_JOBS, "-c", "1", env={"COGWORKER_DEAD_MAX_JOBS": "3"})

    wait_until(lambda: ledger.count("attempt") == 5 and ledger.count("ran") == 1, 20,
               lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    # Five died one after the other; the cap keeps the three most recent.
    died = [event.jid for event in ledger.events("death_handler")]
    assert sorted(died) == sorted(doomed)
    assert [job["jid"] for job, _ in sorted_set_jobs(redis_client, keys.dead)] == died[2:]
    [ran] = ledger.events("ran")
    assert ran.jid == scheduled
    assert float(ran.detail) >= 0  # not before it was due
    assert redis_client.zcard(keys.schedule) == 0
