"""A real worker, in this process with its real threads (the ``Launcher``), on every broker
and with both built-in fetch strategies: enqueue, fetch, retry, schedule, dead and cron.

Each test waits for events (a job ran, a job died), never for a time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from cogworker.app import App
from cogworker.core.broker import Broker
from cogworker.core.payload import Payload
from helpers.threaded_worker import WAIT, Countdown, working


@pytest.fixture(params=["reliable", "basic"])
def fetch(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def app(broker: Broker, fetch: str, namespace: str) -> Iterator[App]:
    """An app on the broker under test: short poll and tick intervals, so retries,
    scheduled jobs and cron slots come round quickly."""
    application = App(namespace=namespace, fetch=fetch, concurrency=3, timeout=2.0,
                      poll_interval=0.2, queues=("default", "low"),
                      plugin_options={"periodic": {"tick_interval": 0.2}})
    application.use_broker(broker)
    try:
        yield application
    finally:
        application.close()


def test_every_job_pushed_runs_once(app: App, broker: Broker) -> None:
    ran = Countdown(30)

    @app.job
    def work(n: int) -> None:
        ran.record(n)

    @app.job(queue="low")
    def background(n: int) -> None:
        ran.record(n)

    for n in range(20):
        work.perform_async(n)
    for n in range(20, 30):
        background.perform_async(n)

    with working(app) as launcher:
        assert ran.done.wait(WAIT)
        identity = launcher.identity

    assert sorted(ran.calls) == list(range(30))
    assert broker.queues.size("default") == broker.queues.size("low") == 0
    assert broker.held.held(identity) == []
    assert broker.stats.totals().processed == 30


def test_a_failed_job_retries_and_then_succeeds(app: App, broker: Broker) -> None:
    attempts = Countdown(2)

    @app.job(retry=3, retry_in=lambda count, exc, job: 0)
    def flaky() -> None:
        attempts.record("attempt")
        if len(attempts.calls) == 1:
            raise RuntimeError("the first attempt fails")

    flaky.perform_async()
    with working(app):
        assert attempts.done.wait(WAIT)

    assert len(attempts.calls) == 2
    assert broker.sets.size("retry") == 0
    assert broker.stats.totals().failed == 1


def test_a_scheduled_job_runs_once_it_is_due(app: App, broker: Broker) -> None:
    ran = Countdown(1)

    @app.job
    def later(label: str) -> None:
        ran.record(label)

    later.perform_in(0.5, "due soon")
    assert broker.sets.size("schedule") == 1

    with working(app):
        assert ran.done.wait(WAIT)

    assert ran.calls == ["due soon"]
    assert broker.sets.size("schedule") == 0


def test_a_job_out_of_retries_goes_to_dead(app: App, broker: Broker) -> None:
    died: list[Payload] = []
    death = threading.Event()

    @app.death_handler
    def on_death(job: Payload, exc: BaseException) -> None:
        died.append(job)
        death.set()

    @app.job(retry=0)
    def doomed() -> None:
        raise ValueError("never works")

    jid = doomed.perform_async()
    with working(app):
        assert death.wait(WAIT)

    [entry] = broker.sets.page("dead", 0, 10)
    assert [job["jid"] for job in died] == [jid]
    assert '"error_class":"ValueError"' in entry.raw
    assert broker.queues.size("default") == 0


def test_a_cron_entry_fires_its_slot_once(app: App, broker: Broker) -> None:
    fired = Countdown(1)

    @app.job
    def nightly() -> None:
        fired.record("fired")

    entry = app.periodic("* * * * *", nightly)
    with working(app):
        assert fired.done.wait(WAIT)  # catch-up: the most recent slot fires at start

    assert fired.calls == ["fired"]
    [slot] = broker.periodic.last_slots([entry.pjid]).values()
    assert slot is not None and slot % 60 == 0
    assert entry.pjid in broker.periodic.schedule()
