"""Job execution, failure routing and death hooks, on the in-memory broker with the
built-in reliable fetcher (see :mod:`engine.engine_app`)."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from typing import Any

import pytest

import cogworker
from cogworker.core.broker import SortedSetName
from cogworker.core.middleware import JobContext
from cogworker.core.outage import OutageLog
from cogworker.testing.memory_broker import MemoryBroker
from cogworker.worker.failures import Outcome, decide, default_backoff
from cogworker.worker.manager import Manager
from engine.engine_app import entries, fetch_one, job_runner, memory_app


def stored(broker: MemoryBroker, set_name: SortedSetName) -> list[dict[str, Any]]:
    return [json.loads(entry.raw) for entry in entries(broker, set_name)]


def held(app: cogworker.App, broker: MemoryBroker) -> list[str]:
    """The raws the app's process holds (fetched and not settled yet)."""
    return broker.held.held(app.identity)


def test_a_successful_job_runs_and_is_acknowledged() -> None:
    app, broker = memory_app()
    seen: list[int] = []

    @app.job
    def add(n: int) -> None:
        seen.append(n)

    add.perform_async(41)
    runner, _, settler, fetcher = job_runner(app)
    work = fetch_one(fetcher)
    assert held(app, broker) == [work.raw]
    settlement = runner.run(work)
    settler.settle(work, settlement)
    assert seen == [41]
    assert settlement.kind == "ack" and held(app, broker) == []
    assert broker.stats.totals().processed == 1 and broker.stats.totals().failed == 0


def test_a_failing_job_goes_to_retry_with_the_default_backoff() -> None:
    app, broker = memory_app()

    @app.job(retry=2)
    def boom() -> None:
        raise ValueError("nope")

    boom.perform_async()
    runner, _, settler, fetcher = job_runner(app)
    before = time.time()
    work = fetch_one(fetcher)
    settler.settle(work, runner.run(work))
    (entry,) = entries(broker, "retry")
    job = json.loads(entry.raw)
    assert job["retry_count"] == 1 and job["error_class"] == "ValueError"
    assert job["error_message"] == "nope" and job["failed_at"] >= before
    assert before + 16 <= entry.score <= time.time() + 74  # 1⁴ + 15 + rand(0..29)·2
    assert broker.stats.totals().failed == 1 and held(app, broker) == []


def test_retries_end_in_dead_with_death_handlers_isolated(caplog: pytest.LogCaptureFixture) -> None:
    app, broker = memory_app()
    calls: list[str] = []

    def exhausted(job: dict[str, Any], exc: BaseException) -> None:
        calls.append(f"job:{job['retry_count']}:{exc}")

    @app.job(retry=1, retries_exhausted=exhausted)
    def boom() -> None:
        raise RuntimeError("always")

    @app.death_handler
    def broken(job: dict[str, Any]) -> None:
        raise OSError("handler bug")

    @app.death_handler
    def second(job: dict[str, Any], exc: BaseException) -> None:
        job["mutated"] = True
        calls.append("app")

    boom.perform_async()
    runner, _, settler, fetcher = job_runner(app)
    for _ in range(2):
        work = fetch_one(fetcher)
        settler.settle(work, runner.run(work))
        for entry in entries(broker, "retry"):  # due now: the retry comes round at once
            assert broker.sets.graduate("retry", entry.score, limit=1).moved == 1
    (dead,) = stored(broker, "dead")
    assert entries(broker, "retry") == [] and held(app, broker) == []
    assert dead["retry_count"] == 2 and "mutated" not in dead
    assert calls == ["job:2:always", "app"]
    assert "death handler" in caplog.text and "handler bug" in caplog.text


@pytest.mark.parametrize(
    ("answer", "outcome", "delay"),
    [(None, Outcome.RETRY, None), ("kill", Outcome.DEAD, 0.0), ("discard", Outcome.DISCARD, 0.0),
     (0, Outcome.RETRY, 0.0), (7.5, Outcome.RETRY, 7.5), (-1, Outcome.RETRY, None),
     ("soon", Outcome.RETRY, None), (float("nan"), Outcome.RETRY, None)],
)
def test_retry_in_outcomes(answer: Any, outcome: Outcome, delay: float | None,
                           caplog: pytest.LogCaptureFixture) -> None:
    app, _ = memory_app()
    received: list[Any] = []

    def retry_in(count: int, exc: BaseException, job: dict[str, Any]) -> Any:
        received.append((count, str(exc), job["jid"]))
        return answer

    definition = app.registry.register(lambda: None, name="x", options={}, retry_in=retry_in)
    decision = decide(definition, {"jid": "j1", "retry_count": 2, "retry": 5}, KeyError("k"))
    assert received == [(2, "'k'", "j1")]
    assert decision.outcome is outcome
    if delay is None:
        assert 3**4 + 15 <= decision.delay <= 3**4 + 15 + 29 * 4
    else:
        assert decision.delay == delay
    if answer in (-1, "soon") or (isinstance(answer, float) and math.isnan(answer)):
        assert "using the default backoff" in caplog.text


def test_retry_in_that_raises_falls_back_and_is_not_asked_when_out_of_retries() -> None:
    asked: list[int] = []

    def bad(count: int) -> float:
        asked.append(count)
        raise ZeroDivisionError

    app, _ = memory_app()
    definition = app.registry.register(lambda: None, name="y", options={}, retry_in=bad)
    assert decide(definition, {"retry_count": 0}, ValueError()).outcome is Outcome.RETRY
    assert decide(definition, {"retry_count": 25}, ValueError()).outcome is Outcome.DEAD
    assert asked == [0]


def test_default_backoff_window() -> None:
    for count in (1, 2, 5):
        samples = [default_backoff(count) for _ in range(200)]
        assert min(samples) >= count**4 + 15
        assert max(samples) <= count**4 + 15 + 29 * (count + 1)


def test_class_job_retry_in_and_retries_exhausted() -> None:
    app, broker = memory_app()
    died: list[str] = []

    @app.job(retry=3)
    class Flaky(cogworker.Job):
        def perform(self) -> None:
            raise ValueError(self.jid)

        def retry_in(self, count: int) -> str:
            return "kill"

        @classmethod
        def retries_exhausted(cls, job: dict[str, Any], exc: BaseException) -> None:
            died.append(job["jid"])

    jid = Flaky.perform_async()
    runner, _, settler, fetcher = job_runner(app)
    work = fetch_one(fetcher)
    settler.settle(work, runner.run(work))
    assert died == [jid]
    assert stored(broker, "dead")[0]["error_message"] == jid


def test_discard_writes_nothing() -> None:
    app, broker = memory_app()

    @app.job(retry_in=lambda *_: "discard")
    def gone() -> None:
        raise ValueError

    gone.perform_async()
    runner, _, settler, fetcher = job_runner(app)
    work = fetch_one(fetcher)
    settler.settle(work, runner.run(work))
    assert broker.sets.size("retry") == 0 and broker.sets.size("dead") == 0
    assert held(app, broker) == [] and broker.stats.totals().failed == 1  # acknowledged


def test_unparseable_payloads_are_buried_with_their_bytes() -> None:
    app, broker = memory_app()
    runner, _, settler, fetcher = job_runner(app)
    garbage = ["not json", "[1,2]", '{"class":"X"}']
    broker.queues.store([("default", raw) for raw in garbage], [])
    for _ in garbage:
        work = fetch_one(fetcher)
        assert held(app, broker) == [work.raw]
        settler.settle(work, runner.run(work))
        assert held(app, broker) == []  # filed and dropped in one step (fetcher.interrupt)
    dead = stored(broker, "dead")
    assert sorted(d["raw_payload"] for d in dead) == sorted(garbage)
    assert all(d["class"] == "(unparseable)" and d["queue"] == "default" for d in dead)
    assert broker.stats.totals().failed == 3


def test_unknown_job_fails_inside_the_chain() -> None:
    app, broker = memory_app()
    seen: list[str] = []

    def observe(ctx: JobContext, call_next: Any) -> Any:
        try:
            return call_next()
        except Exception as exc:
            seen.append(type(exc).__name__)
            raise

    app.server_middleware.append(observe)
    app.push({"class": "NoSuchJob", "args": [], "retry": 0})
    runner, _, settler, fetcher = job_runner(app)
    work = fetch_one(fetcher)
    settler.settle(work, runner.run(work))
    assert seen == ["UnknownJobError"]
    assert stored(broker, "dead")[0]["error_class"] == "cogworker.core.errors.UnknownJobError"


def test_server_middleware_that_does_not_call_through_skips_the_job() -> None:
    app, broker = memory_app()
    ran: list[int] = []
    app.server_middleware.append(lambda ctx, call_next: None)

    @app.job
    def job() -> None:
        ran.append(1)

    job.perform_async()
    runner, _, settler, fetcher = job_runner(app)
    work = fetch_one(fetcher)
    settler.settle(work, runner.run(work))
    assert ran == [] and broker.stats.totals().processed == 1 and held(app, broker) == []


def test_a_failed_retry_write_interrupts_instead_of_requeueing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, broker = memory_app()

    @app.job
    def boom() -> None:
        raise ValueError("x")

    def store_down(*args: object) -> None:
        raise OSError("down")

    boom.perform_async()
    runner, _, settler, fetcher = job_runner(app)
    work = fetch_one(fetcher)
    with monkeypatch.context() as patch:
        patch.setattr(broker.sets, "file", store_down)
        settlement = runner.run(work)
    settler.settle(work, settlement)
    (entry,) = entries(broker, "retry")
    job = json.loads(entry.raw)
    assert settlement.kind == "interrupt"
    assert job["interrupted_count"] == 1 and job["retry_count"] == 1
    assert entry.score == pytest.approx(time.time() + 30, abs=5)
    # filed and dropped, never given back to the queue
    assert held(app, broker) == [] and broker.queues.size("default") == 0


def test_manager_runs_sync_and_async_jobs_together_and_drains() -> None:
    app, broker = memory_app(concurrency=4, queues=("high", "high", "low"))
    done: list[str] = []
    lock = threading.Lock()

    @app.job(queue="high")
    def sync_job(n: int) -> None:
        with lock:
            done.append(f"s{n}")

    @app.job(queue="low")
    async def async_job(n: int) -> None:
        await asyncio.sleep(0.001)
        with lock:
            done.append(f"a{n}")

    for n in range(50):
        sync_job.perform_async(n)
        async_job.perform_async(n)
    fetcher = app.hooks.make_fetcher(app, app.broker)
    manager = Manager(app, fetcher, OutageLog())
    manager.start()
    deadline = time.monotonic() + 30
    while len(done) < 100 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert manager.stop(timeout=5) == 0
    assert sorted(done) == sorted([f"s{n}" for n in range(50)] + [f"a{n}" for n in range(50)])
    assert broker.stats.totals().processed == 100 and held(app, broker) == []


def test_manager_quiet_fetches_nothing() -> None:
    app, broker = memory_app(concurrency=2)

    @app.job
    def job() -> None: ...

    fetcher = app.hooks.make_fetcher(app, app.broker)
    manager = Manager(app, fetcher, OutageLog())
    manager.quiet()
    manager.start()
    job.perform_async()
    time.sleep(0.3)
    assert broker.queues.size("default") == 1 and held(app, broker) == []
    assert manager.is_quiet
    manager.stop(timeout=1)


def test_quiet_hands_back_the_jobs_fetched_ahead_at_once() -> None:
    app, broker = memory_app(concurrency=1)
    running, release = threading.Event(), threading.Event()

    @app.job
    def job(n: int) -> None:
        running.set()
        release.wait(10)

    for n in range(5):
        job.perform_async(n)
    fetcher = app.hooks.make_fetcher(app, app.broker)
    manager = Manager(app, fetcher, OutageLog())
    manager.start()
    assert running.wait(10)
    # the one thread's job, and one fetched ahead (the depth is not measured yet)
    assert len(held(app, broker)) == 2 and broker.queues.size("default") == 3
    manager.quiet()  # the running job goes on; the one waiting goes back now
    assert len(held(app, broker)) == 1 and broker.queues.size("default") == 4
    release.set()
    assert manager.stop(timeout=5) == 0
    assert broker.queues.size("default") == 4 and held(app, broker) == []


def test_outage_log_collapses_repeats(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    log = OutageLog(summary_interval=0.05)
    for _ in range(20):
        log.report("fetch", cogworker.BrokerUnavailableError("down"))
    time.sleep(0.06)
    log.report("fetch", cogworker.BrokerUnavailableError("down"))
    log.recovered("fetch")
    lines = [r.getMessage() for r in caplog.records]
    assert sum("Redis unavailable" in line for line in lines) == 1
    assert sum("still unavailable" in line for line in lines) == 1
    assert sum("available again after 21 error(s)" in line for line in lines) == 1


def test_outage_log_collapses_acl_refusals_and_shows_other_errors_every_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    log = OutageLog(summary_interval=60)
    refusal = cogworker.BrokerPermissionError("NOPERM no channel; grant &ns:*")
    for _ in range(30):  # a subscriber retrying every second for half a minute
        log.report("remote control", refusal)
    log.report("fetch", cogworker.BrokerError("WRONGTYPE"))
    log.report("fetch", cogworker.BrokerError("WRONGTYPE"))
    log.recovered("remote control")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "remote control: Redis refused: NOPERM no channel; grant &ns:* "
        "(repeats summarized every 60s)",
        "fetch: BrokerError: WRONGTYPE",
        "fetch: BrokerError: WRONGTYPE",
        "remote control: Redis allows it again after 30 error(s) over 0s",
    ]
