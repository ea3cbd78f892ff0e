"""Whatever a job raises fails it and nothing else; a failure can be traced to its line; and a
job that ran is never run again because the bookkeeping after it failed (scenario 38)."""

from __future__ import annotations

import pytest
import redis

from cogworker.core.backtrace import backtrace_lines
from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from delivery.conftest import APP_HEADER, StartAppWorker
from delivery.support import assert_drained
from helpers.workers import Ledger, wait_until
from runtime.support import payload, push_raw, sorted_set_jobs

pytestmark = pytest.mark.slow

RAISERS = APP_HEADER + '''
import asyncio


class Custom(BaseException):
    """Not an Exception."""


RAISED = {
    "keyboard": KeyboardInterrupt,
    "cancelled": asyncio.CancelledError,
    "custom": Custom,
    "exit": SystemExit,
}


@app.job(name="Raise", retry=False)
def raise_it(kind):
    record(kind, "Raise", "ran")
    raise RAISED[kind]("raised by the job")


@app.job(name="Work")
def work(tag):
    record(tag, "Work", "ran")


def refuse(count, exc, job):
    raise KeyboardInterrupt("raised by retry_in")


@app.job(name="Stubborn", retry=2, retry_in=refuse)
def stubborn(tag):
    record(tag, "Stubborn", "ran")
    raise ValueError("fails, and its retry_in raises too")


@app.death_handler
def mourn(job, exc):
    raise Custom("raised by a death handler")


@app.job(name="Lookup", retry=3)
def lookup(key):
    record(key, "Lookup", "ran")
    return {}[key]  # the line a backtrace must point to


@app.job(name="Short", retry=False, backtrace=2)
def short(key):
    return {}[key]


@app.job(name="Bare", retry=False, backtrace=False)
def bare(key):
    return {}[key]
'''

BROKEN_BOOKKEEPING = APP_HEADER + '''
import logging


class Broken(logging.Filter):
    """Breaks the bookkeeping after a job: raises on its "done" and "dead" lines."""

    def filter(self, record):
        if record.getMessage().startswith(("done:", "dead:")):
            raise RuntimeError("bookkeeping broke")
        return True


logging.getLogger("cogworker.job").addFilter(Broken())


@app.job(name="Work")
def work(tag):
    record(tag, "Work", "ran")


@app.job(name="Fail", retry=False)
def fail(tag):
    record(tag, "Fail", "ran")
    raise ValueError("failed for real")
'''


def job(job_class: str, tag: str, **fields: object) -> str:
    return payload(job_class, [tag], "default", new_jid(), **fields)


def test_a_base_exception_fails_the_job_and_the_processor_thread_goes_on(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker,
) -> None:
    kinds = ["keyboard", "cancelled", "custom", "exit"]
    # One processor thread: each later job runs only if that thread survived the one
    # before, its retry_in hook and its death handler.
    push_raw(redis_client, keys, "default",
             *(job("Raise", kind, retry=False) for kind in kinds),
             job("Stubborn", "stubborn", retry=2), job("Work", "after"))
    worker = app_worker(RAISERS, redis_url, "-c", "1")
    wait_until(lambda: ledger.count("ran") == 6 and redis_client.zcard(keys.dead) == 4
               and redis_client.zcard(keys.retry) == 1, 20, lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    assert [event.jid for event in ledger.events("ran")] == [*kinds, "stubborn", "after"]
    dead = {entry["args"][0]: entry for entry, _ in sorted_set_jobs(redis_client, keys.dead)}
    assert {kind: entry["error_class"] for kind, entry in dead.items()} == {
        "keyboard": "KeyboardInterrupt", "cancelled": "asyncio.exceptions.CancelledError",
        "custom": "jobapp.Custom", "exit": "SystemExit"}
    assert all(entry["error_message"] == "raised by the job" for entry in dead.values())
    [(retried, _)] = sorted_set_jobs(redis_client, keys.retry)
    assert (retried["args"], retried["error_class"]) == (["stubborn"], "ValueError")
    log = worker.output()
    assert "Exception in thread" not in log
    assert log.count("retry_in of Stubborn raised KeyboardInterrupt") == 1
    assert log.count("death handler <function mourn") == len(kinds)  # failed, logged, passed
    assert redis_client.llen(keys.queue("default")) == 0


def test_each_failed_attempt_logs_its_traceback_once_and_its_record_keeps_it(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker,
) -> None:
    push_raw(redis_client, keys, "default", job("Lookup", "missing", retry=3),
             job("Short", "gone", retry=False, backtrace=2),
             job("Bare", "gone", retry=False, backtrace=False))
    worker = app_worker(RAISERS, redis_url, "-c", "1")
    wait_until(lambda: redis_client.zcard(keys.retry) == 1 and redis_client.zcard(keys.dead) == 2,
               20, lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    [(retried, _)] = sorted_set_jobs(redis_client, keys.retry)
    lines = backtrace_lines(retried["error_backtrace"])
    assert lines[-1] == "KeyError: 'missing'"
    assert any('jobapp.py", line' in line and "in lookup" in line for line in lines)
    assert "return {}[key]  # the line a backtrace must point to" in "\n".join(lines)
    dead = {entry["class"]: entry for entry, _ in sorted_set_jobs(redis_client, keys.dead)}
    short = backtrace_lines(dead["Short"]["error_backtrace"])
    assert len(short) == 2 and short[-1] == "KeyError: 'gone'"
    assert "error_backtrace" not in dead["Bare"]

    log = worker.output().splitlines()
    # Each job's traceback once (a traceback's last line is its exception).
    assert sum(line == "KeyError: 'missing'" for line in log) == 1
    assert sum(line == "KeyError: 'gone'" for line in log) == 2
    failures = [index for index, line in enumerate(log)
                if " WARNING: fail: " in line or " ERROR: dead: " in line]
    assert len(failures) == 3  # one line per failed attempt, its traceback right after it
    assert all(log[index + 1] == "Traceback (most recent call last):" for index in failures)
    assert "retry in" in log[failures[0]] and "(attempt 1/4)" in log[failures[0]]


def test_a_job_that_ran_is_settled_even_when_the_bookkeeping_after_it_fails(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker,
) -> None:
    push_raw(redis_client, keys, "default", job("Work", "ok"), job("Fail", "bad", retry=False),
             job("Work", "next"))
    worker = app_worker(BROKEN_BOOKKEEPING, redis_url, "-c", "1")
    wait_until(lambda: ledger.count("ran") == 3 and redis_client.zcard(keys.dead) == 1, 20,
               lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    assert sorted(event.jid for event in ledger.events("ran")) == ["bad", "next", "ok"]
    [(dead, _)] = sorted_set_jobs(redis_client, keys.dead)
    assert (dead["args"], dead["error_class"]) == (["bad"], "ValueError")
    log = worker.output()
    assert log.count("bookkeeping after") == 3  # two successes and one death
    assert "handing it back" not in log
    assert_drained(redis_client, keys, dead=1)
