"""The orphan check judges other processes only once this process's own beats have settled,
and only while the broker still holds this process's own presence record."""

from __future__ import annotations

import pytest
import redis

import cogworker
from cogworker.core.outage import OutageLog
from cogworker.redis.keys import KeySchema
from cogworker.worker.beat_continuity import BeatContinuity
from cogworker.worker.poller import Poller
from worker.conftest import MakeApp
from worker.support import FakeManager
from worker.test_poller import FakeClock, fetcher_of, job, leave_orphan

INTERVAL = 1.0
TTL = 4.0
ORPHAN = "gone:1:aaaaaaaaaaaa"


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def own_beat(app: cogworker.App, continuity: BeatContinuity, clock: Clock) -> None:
    """What this process's heartbeat does: write presence, record the success."""
    started = clock.now
    app.broker.processes.beat(app.identity, {"pid": 1}, 0, False, ["default"], ttl=TTL,
                              holds_jobs=True)
    continuity.beat_succeeded(started)


def beats(app: cogworker.App, continuity: BeatContinuity, clock: Clock, count: int) -> None:
    for _ in range(count):
        clock.now += INTERVAL
        own_beat(app, continuity, clock)


Setup = tuple[cogworker.App, BeatContinuity, Clock, Poller, FakeManager]


@pytest.fixture
def setup(make_app: MakeApp) -> Setup:
    app = make_app(heartbeat_interval=INTERVAL, heartbeat_ttl=TTL)
    clock = Clock()
    continuity = BeatContinuity(INTERVAL, TTL, clock=clock)
    manager = FakeManager()
    poller = Poller(app, manager, OutageLog(), fetcher_of(app), clock=FakeClock(),
                    continuity=continuity)
    return app, continuity, clock, poller, manager


def test_after_an_outage_the_check_waits_for_three_beats_then_judges(
    setup: Setup, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    app, continuity, clock, poller, manager = setup
    own_beat(app, continuity, clock)
    continuity.beat_failed()  # the broker went away
    leave_orphan(redis_client, keys, ORPHAN, job("first"))
    beats(app, continuity, clock, 1)  # back: the others have not beaten again yet

    poller.poll_once()
    assert redis_client.llen(keys.queue("first")) == 0
    assert not poller.ready_for_ticker.is_set()  # the registry was not read
    assert manager.reconciles == 1  # its own held jobs are still reconciled

    beats(app, continuity, clock, 3)
    poller.poll_once()  # deferred checks are due again at the next poll
    assert redis_client.llen(keys.queue("first")) == 1
    assert poller.ready_for_ticker.is_set()


def test_a_broker_that_lost_this_process_s_presence_is_not_trusted_to_judge(
    setup: Setup, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    """A restart from an older snapshot: every record is stale, this process's own too."""
    app, continuity, clock, poller, _ = setup
    beats(app, continuity, clock, 4)
    assert continuity.settled()
    redis_client.delete(keys.process(app.identity))
    leave_orphan(redis_client, keys, ORPHAN, job("first"))

    poller.poll_once()
    assert redis_client.llen(keys.queue("first")) == 0
    assert not continuity.settled()  # the loss is a break: wait for three beats again

    beats(app, continuity, clock, 4)
    poller.poll_once()
    assert redis_client.llen(keys.queue("first")) == 1


def test_a_process_that_started_without_trouble_judges_at_its_first_check(
    setup: Setup, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    app, continuity, clock, poller, _ = setup
    own_beat(app, continuity, clock)
    leave_orphan(redis_client, keys, ORPHAN, job("first"))

    poller.poll_once()
    assert redis_client.llen(keys.queue("first")) == 1
