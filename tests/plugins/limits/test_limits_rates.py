"""A token bucket through a real worker (threads, real Redis): a burst up to ``burst``,
then the steady rate. Checked from the jobs' own start times, kept outside Redis."""

from __future__ import annotations

import threading
import time

from helpers.threaded_worker import WAIT, working
from plugins.limits.conftest import MakeApp

RATE, BURST, JOBS = 5.0, 8, 20


def test_a_bucket_lets_a_burst_through_then_its_steady_rate(make_app: MakeApp) -> None:
    app = make_app(concurrency=8, poll_interval=0.1)
    starts: list[float] = []
    lock, done = threading.Lock(), threading.Event()

    @app.job(limits=[app.limiter.bucket("mail", rate=RATE, burst=BURST)])
    def send(number: int) -> None:
        with lock:
            starts.append(time.time())
            if len(starts) == JOBS:
                done.set()

    for number in range(JOBS):
        send.perform_async(number)
    with working(app):
        assert done.wait(WAIT * 2), f"only {len(starts)} of {JOBS} ran"
    starts.sort()
    burst_span = starts[BURST - 1] - starts[0]
    steady = starts[BURST:]
    steady_rate = (len(steady) - 1) / (steady[-1] - steady[0])
    print(f"\nbucket(rate {RATE:g}/s, burst {BURST}): the first {BURST} started within "
          f"{burst_span:.2f} s; the other {len(steady)} at {steady_rate:.2f}/s")
    # The token bucket's own bound: at most BURST + RATE x span starts in any span (a
    # started job was admitted a moment before it started, hence the one extra).
    for first in range(len(starts)):
        for last in range(first, len(starts)):
            assert last - first + 1 <= BURST + RATE * (starts[last] - starts[first]) + 1
    # The burst came faster than the steady rate could have let it through.
    assert burst_span < (BURST - 1) / RATE
