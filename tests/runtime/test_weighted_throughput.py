"""A real worker process works 1,000 jobs across weighted queues, each exactly once."""

from __future__ import annotations

import math

import pytest
import redis

from cogworker.api import Stats
from cogworker.app import App
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, wait_until
from runtime.support import WORK_JOBS, StartWorker

PER_QUEUE = 500


def rank_sum_z(first: list[int], second: list[int]) -> float:
    """Mann-Whitney U as a z-score: how far ``first`` comes before ``second``.

    Under "the order ignores the queue" z is standard normal; positive means ``first``
    tends to come earlier. Positions are distinct, so there are no ties to correct for.
    """
    n1, n2 = len(first), len(second)
    ranks = {position: rank for rank, position in enumerate(sorted(first + second), 1)}
    rank_sum = sum(ranks[position] for position in first)
    u_first_later = rank_sum - n1 * (n1 + 1) / 2
    mean = n1 * n2 / 2
    spread = math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    return (mean - u_first_later) / spread


def test_rank_sum_z_sees_order_and_its_absence() -> None:
    assert rank_sum_z([1, 2, 3], [4, 5, 6]) > 1.9
    assert rank_sum_z([4, 5, 6], [1, 2, 3]) < -1.9
    assert rank_sum_z([1, 4, 5, 8], [2, 3, 6, 7]) == 0


@pytest.mark.slow
def test_a_thousand_jobs_each_run_once_and_the_heavier_queue_drains_first(
    start_worker: StartWorker, pusher: App, ledger: Ledger, redis_client: redis.Redis,
    keys: KeySchema,
) -> None:
    @pusher.job(name="Work")
    def work(tag: int) -> None: ...

    # Both queues are full before the worker starts, so every fetch has the choice.
    high = pusher.push_bulk(work, [[n] for n in range(PER_QUEUE)], queue="high")
    low = pusher.push_bulk(work, [[n] for n in range(PER_QUEUE)], queue="low")
    pushed = [jid for jid in [*high, *low] if jid is not None]
    assert len(pushed) == 2 * PER_QUEUE
    worker = start_worker(WORK_JOBS, "-q", "high,3", "-q", "low", "-c", "5")

    wait_until(lambda: ledger.count("ran") >= 2 * PER_QUEUE, 60,
               lambda: f"{ledger.count('ran')} of {2 * PER_QUEUE} ran:\n"
                       f"{worker.output()[-3000:]}")
    assert worker.stop() == 0, worker.output()[-3000:]

    runs = ledger.events("ran")
    assert sorted(event.jid for event in runs) == sorted(pushed)  # each exactly once
    assert redis_client.llen(keys.queue("high")) == redis_client.llen(keys.queue("low")) == 0
    position = {"high": [], "low": []}  # type: dict[str, list[int]]
    for index, event in enumerate(runs):
        position[event.detail].append(index)
    assert len(position["high"]) == len(position["low"]) == PER_QUEUE
    # With weights 3:1 high is tried first on about 3 fetches in 4, so its jobs run
    # earlier: z lands around 18. Without any preference z would exceed 5 with a
    # probability below one in three million, so this neither flakes nor passes by luck.
    assert rank_sum_z(position["high"], position["low"]) > 5
    stats = Stats(pusher)
    assert (stats.processed, stats.failed) == (2 * PER_QUEUE, 0)
    # The hourly throughput sums to the same (the run may straddle an hour boundary).
    hours = stats.throughput(hours=2)
    assert sum(point["processed"] for point in hours) == 2 * PER_QUEUE
    assert worker.output().count("done: Work jid=") == 2 * PER_QUEUE
