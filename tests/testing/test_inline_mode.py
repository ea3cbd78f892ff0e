"""Inline mode as a user meets it: the ``cogworker_inline`` fixture."""

from __future__ import annotations

from testing.conftest import RunExample


def test_inline_runs_jobs_at_the_push(run_example: RunExample) -> None:
    result = run_example('''
import asyncio
import threading

import pytest

import cogworker
import example
from example import Report, explode, fetch, import_feed, send, sign_up


def test_jobs_run_in_the_callers_thread_through_both_chains(cogworker_inline):
    jid = sign_up.perform_async("ann")

    assert len(jid) == 24
    me = threading.current_thread().name
    assert example.log == [("send", "ann", me)]
    assert example.client_seen == ["example.sign_up", "example.send"]
    assert example.server_seen == ["example.sign_up", "example.send"]
    assert cogworker_inline.jobs == {}


def test_delays_are_ignored(cogworker_inline):
    send.perform_in(3600, "later")
    Report.perform_at(4_000_000_000, 3)

    assert [entry[:2] for entry in example.log] == [("send", "later"), ("report", 3)]


def test_exceptions_reach_the_caller_and_nothing_is_retried(cogworker_inline):
    with pytest.raises(RuntimeError, match="kaboom"):
        explode.perform_async("kaboom")
    assert cogworker_inline.jobs == {} and cogworker_inline.dead == []


def test_async_job_in_a_sync_test(cogworker_inline):
    fetch.perform_async("http://x")

    assert example.log == [("fetch", "http://x", threading.current_thread().name)]


def test_async_job_pushed_from_inside_an_event_loop(cogworker_inline):
    async def handler():
        fetch.perform_async("http://y")

    asyncio.run(handler())
    assert [entry[:2] for entry in example.log] == [("fetch", "http://y")]


def test_unique_lock_is_released_after_the_run(cogworker_inline):
    assert import_feed.perform_async(1) is not None
    assert import_feed.perform_async(1) is not None
    assert example.log == [("import", 1), ("import", 1)]


def test_a_non_json_argument_fails_before_running(cogworker_inline):
    with pytest.raises(cogworker.JobArgumentError):
        send.perform_async(b"bytes")
    assert example.log == []
''')
    result.assert_outcomes(passed=7)
