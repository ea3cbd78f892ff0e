"""Fake mode as a user meets it: the ``cogworker_fake`` fixture and the job helpers."""

from __future__ import annotations

from testing.conftest import RunExample


def test_recorded_payloads_are_what_a_real_push_stores(run_example: RunExample) -> None:
    result = run_example('''
import json

import example
from example import Report, send, sign_up


def test_function_job_is_recorded_not_run(cogworker_fake):
    jid = send.perform_async("ann@example.com")

    [job] = send.jobs
    assert job["jid"] == jid
    assert job["class"] == "example.send"
    assert job["args"] == ["ann@example.com"]
    assert job["queue"] == "mail"
    assert job["retry"] is True
    assert "at" not in job and job["enqueued_at"] >= job["created_at"]
    assert example.log == []
    assert cogworker_fake.jobs == {"example.send": [job]}


def test_client_middleware_ran_and_its_changes_are_stored(cogworker_fake):
    send.perform_async("ann@example.com")

    assert example.client_seen == ["example.send"]
    assert send.jobs[0]["traced_by"] == "client-middleware"


def test_payload_is_a_json_round_trip(cogworker_fake):
    sign_up.perform_async({"name": "ann", "tags": ["a", "b"]})

    [job] = sign_up.jobs
    assert json.loads(json.dumps(job)) == job
    job["args"].append("changed")
    assert sign_up.jobs[0]["args"] == [{"name": "ann", "tags": ["a", "b"]}]


def test_scheduled_job_keeps_its_at(cogworker_fake):
    send.perform_in(3600, "later@example.com")

    [job] = send.jobs
    assert abs(job["at"] - (job["created_at"] + 3600)) < 1
    assert "enqueued_at" not in job


def test_class_job_and_push_bulk(cogworker_fake):
    Report.perform_async(21)
    example.app.push_bulk(Report, [[1], [2]])

    assert [job["args"] for job in Report.jobs] == [[21], [1], [2]]
    assert Report.jobs[0]["retry"] == 2


def test_clear_and_clear_all(cogworker_fake):
    send.perform_async("a")
    Report.perform_async(1)

    send.clear()
    assert send.jobs == [] and len(Report.jobs) == 1
    cogworker_fake.clear_all()
    assert cogworker_fake.jobs == {}
''')
    result.assert_outcomes(passed=6)


def test_perform_one_drain_and_drain_all(run_example: RunExample) -> None:
    result = run_example('''
import threading

import pytest

import example
from cogworker.core.errors import EmptyQueueError
from cogworker.testing import TestingError
from example import Report, fetch, forever, send, sign_up


def test_perform_one_runs_the_oldest_in_this_thread(cogworker_fake):
    send.perform_async("a")
    send.perform_async("b")

    assert send.perform_one() == "sent a"
    assert example.log == [("send", "a", threading.current_thread().name)]
    assert example.server_seen == ["example.send"]
    assert [job["args"] for job in send.jobs] == [["b"]]


def test_drain_runs_jobs_pushed_by_the_drained_ones(cogworker_fake):
    sign_up.perform_async("ann")

    assert sign_up.drain() == 1
    assert [job["args"] for job in send.jobs] == [["ann"]]
    assert cogworker_fake.drain_all() == 1
    assert [entry[:2] for entry in example.log] == [("send", "ann")]
    assert cogworker_fake.jobs == {}


def test_drain_all_goes_oldest_first_across_jobs(cogworker_fake):
    send.perform_async("first")
    Report.perform_async(2)
    send.perform_async("last")

    assert cogworker_fake.drain_all() == 3
    assert [entry[:2] for entry in example.log] == [
        ("send", "first"), ("report", 2), ("send", "last")]


def test_class_job_gets_its_jid(cogworker_fake):
    jid = Report.perform_async(5)

    assert Report.perform_one() == 10
    assert example.log == [("report", 5, jid)]


def test_async_job_runs_in_the_callers_thread(cogworker_fake):
    fetch.perform_async("http://x")

    assert fetch.perform_one() == "HTTP://X"
    assert example.log == [("fetch", "http://x", threading.current_thread().name)]


def test_perform_one_on_an_empty_queue(cogworker_fake):
    with pytest.raises(EmptyQueueError, match="no jobs of example.send recorded"):
        send.perform_one()
    assert send.drain() == 0
    assert cogworker_fake.drain_all() == 0


def test_a_job_that_enqueues_itself_forever_is_stopped(cogworker_fake):
    forever.perform_async(0)

    with pytest.raises(TestingError, match="keeps coming"):
        cogworker_fake.drain_all(limit=50)
    assert len(forever.jobs) == 1
''')
    result.assert_outcomes(passed=7)


def test_failure_paths(run_example: RunExample) -> None:
    result = run_example('''
import pytest

import cogworker
import example
from example import explode, send, sign_up


def test_draining_a_job_that_raises(cogworker_fake):
    explode.perform_async("kaboom")
    send.perform_async("still here")

    with pytest.raises(RuntimeError, match="kaboom"):
        cogworker_fake.drain_all()

    [retry] = explode.jobs
    assert retry["retry_count"] == 1
    assert retry["error_class"] == "RuntimeError"
    assert retry["error_message"] == "kaboom"
    assert len(send.jobs) == 1  # the drain stopped at the failure


def test_a_non_json_argument_fails_at_the_push(cogworker_fake):
    with pytest.raises(cogworker.JobArgumentError, match="argument #1 of job 'example.send'"):
        send.perform_async({1, 2})
    assert send.jobs == []


def test_a_non_json_value_added_by_middleware_fails_too(cogworker_fake):
    def add_object(ctx, call_next):
        ctx.job["when"] = object()
        return call_next()

    example.app.client_middleware.append(add_object)
    try:
        with pytest.raises(cogworker.JobArgumentError, match="option 'when'"):
            sign_up.perform_async("ann")
    finally:
        example.app.client_middleware.remove(add_object)
    assert sign_up.jobs == []


def test_an_unknown_job_name_fails_when_run(cogworker_fake):
    example.app.push({"class": "elsewhere.Job", "args": [1]})

    assert [job["args"] for job in cogworker_fake.jobs_of("elsewhere.Job")] == [[1]]
    with pytest.raises(cogworker.UnknownJobError, match="elsewhere.Job"):
        cogworker_fake.perform_one("elsewhere.Job")


def test_without_the_fixture_nothing_is_set_up(cogworker_app):
    assert cogworker_app.testing.mode == "disabled"
''')
    result.assert_outcomes(passed=5)


def test_unique_jobs_are_deduplicated_in_memory(run_example: RunExample) -> None:
    result = run_example('''
import example
from example import import_feed


def test_duplicate_push_is_skipped_until_the_job_ran(cogworker_fake):
    assert import_feed.perform_async(1) is not None
    assert import_feed.perform_async(1) is None
    assert import_feed.perform_async(2) is not None
    assert len(import_feed.jobs) == 2

    import_feed.drain()
    assert import_feed.perform_async(1) is not None


def test_clear_releases_the_locks(cogworker_fake):
    import_feed.perform_async(1)
    import_feed.clear()

    assert import_feed.perform_async(1) is not None


def test_locks_do_not_outlive_the_test(cogworker_fake):
    assert import_feed.perform_async(1) is not None


def test_locks_last_while_a_memory_mode_is_in_force():
    with example.app.testing.fake():
        assert import_feed.perform_async(1) is not None
        with example.app.testing.inline():  # still in memory: the lock is still held
            assert import_feed.perform_async(1) is None
        assert example.ping.perform_async("db") is not None
    assert example.app.testing.mode == "disabled"

    with example.app.testing.fake():  # going back to disabled cleared every lock
        assert import_feed.perform_async(1) is not None
        assert example.ping.perform_async("db") is not None  # a window lock too
    assert len(import_feed.jobs) == 2
    example.app.testing.clear_all()
''')
    result.assert_outcomes(passed=4)


def test_modes_switch_and_restore(run_example: RunExample) -> None:
    result = run_example('''
import threading

import pytest

import example
from example import app, send


def test_context_manager_restores_on_error():
    with pytest.raises(ZeroDivisionError):
        with app.testing.fake():
            with app.testing.inline():
                assert app.testing.mode == "inline"
                1 / 0
            assert False, "not reached"
    assert app.testing.mode == "disabled"
    assert app.dispatch_override is None


def test_nested_modes_restore_the_outer_one():
    with app.testing.fake():
        with app.testing.inline():
            send.perform_async("inline")
        assert app.testing.mode == "fake"
        send.perform_async("fake")
        with app.testing.disable():
            assert app.dispatch_override is None
        assert [job["args"] for job in send.jobs] == [["fake"]]
    assert [entry[:2] for entry in example.log] == [("send", "inline")]
    app.testing.clear_all()


def test_draining_after_the_block_still_records_what_jobs_push():
    with app.testing.fake():
        example.sign_up.perform_async("ann")

    assert app.testing.mode == "disabled"
    assert example.sign_up.drain() == 1  # nothing listens on the app's Redis port
    assert [job["args"] for job in send.jobs] == [["ann"]]
    assert app.testing.mode == "disabled"
    app.testing.clear_all()


def test_plain_calls_switch_until_switched_back():
    app.testing.fake()
    try:
        send.perform_async("x")
        assert len(send.jobs) == 1
    finally:
        app.testing.disable()
        app.testing.clear_all()
    assert app.testing.mode == "disabled"


def test_the_mode_is_per_app_not_per_thread(cogworker_fake):
    worker = threading.Thread(target=send.perform_async, args=("from a thread",))
    worker.start()
    worker.join()

    assert [job["args"] for job in send.jobs] == [["from a thread"]]


def test_the_fixture_restores_a_mode_set_before_it(cogworker_app):
    with cogworker_app.testing.inline():
        assert cogworker_app.testing.mode == "inline"
    assert cogworker_app.testing.mode == "disabled"
''')
    result.assert_outcomes(passed=6)
