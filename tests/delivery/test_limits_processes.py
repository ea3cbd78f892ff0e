"""Fleet-wide limiters across real worker processes (issue 20's done-when): a
``concurrent(..., 2)`` class never runs more than 2 at once over 2 processes x 10 threads,
also when one is SIGKILLed mid-run (its slots come back through recovery, not the lease);
and a 5-per-second window holds over 10 s. Checked from a ledger outside Redis: each job
appends ``start``/``end`` lines (``time.time()``, one clock for every process) with
O_APPEND."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from delivery.conftest import MakeClient, StartAppWorker
from helpers.workers import wait_until

pytestmark = pytest.mark.slow

APP = """
import os
import random
import time

import cogworker

app = cogworker.App(redis_url=os.environ["TEST_REDIS_URL"],
                    namespace=os.environ["TEST_NAMESPACE"],
                    plugin_options={"limits": {"backoff": 0.1, "max_backoff": 0.5,
                                               "jitter": 0.5}})
LEDGER = os.path.join(os.environ["TEST_DIR"], "limits.ledger")


def note(event, jid):
    line = f"{event} {jid} {time.time():.6f} {os.getpid()}\\n".encode()
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


@app.job(name="Paired", limits=[app.limiter.concurrent("pair", 2, lease=600)])
def Paired(seconds):
    jid = cogworker.current_job().jid
    note("start", jid)
    time.sleep(seconds)
    note("end", jid)


@app.job(name="Metered", limits=[app.limiter.window("five", 5, per=1.0, sliding=True)])
def Metered():
    note("start", cogworker.current_job().jid)
"""


@dataclass(frozen=True)
class Run:
    jid: str
    pid: int
    started: float
    ended: float | None


def runs(tmp_path: Path) -> list[Run]:
    path = tmp_path / "limits.ledger"
    if not path.exists():
        return []
    opened: dict[tuple[str, int], float] = {}
    done: list[Run] = []
    for line in path.read_text().splitlines():
        event, jid, stamp, pid = line.split()
        if event == "start":
            opened[(jid, int(pid))] = float(stamp)
        elif (jid, int(pid)) in opened:
            done.append(Run(jid, int(pid), opened.pop((jid, int(pid))), float(stamp)))
    return done + [Run(jid, pid, started, None) for (jid, pid), started in opened.items()]


def most_at_once(spans: Sequence[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans],
                    key=lambda event: (event[0], event[1]))  # an end before a start at a tie
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def most_in_span(stamps: Sequence[float], span: float) -> int:
    ordered, peak, first = sorted(stamps), 0, 0
    for last, stamp in enumerate(ordered):
        while stamp - ordered[first] >= span:
            first += 1
        peak = max(peak, last - first + 1)
    return peak


def test_a_concurrent_limit_holds_across_processes_and_a_kill_gives_its_slots_back(
        redis_url: str, tmp_path: Path, app_worker: StartAppWorker,
        make_client: MakeClient) -> None:
    doomed = app_worker(APP, redis_url, "-c", "10")
    survivor = app_worker(APP, redis_url, "-c", "10")
    client = make_client(redis_url)
    jobs = [0.2 + 0.3 * (number % 4) / 3 for number in range(24)]
    jids = {client.push({"class": "Paired", "args": [seconds]}) for seconds in jobs}
    assert None not in jids

    wait_until(lambda: any(run.pid == doomed.pid and run.ended is None
                           for run in runs(tmp_path)), 30,
               lambda: f"the doomed worker never ran a job:\n{doomed.output()[-3000:]}")
    doomed.kill()
    killed_at = time.time()
    cut = [run for run in runs(tmp_path) if run.pid == doomed.pid and run.ended is None]

    def finished() -> set[str]:
        return {run.jid for run in runs(tmp_path) if run.ended is not None}

    wait_until(lambda: finished() >= jids, 60,
               lambda: f"not every job ran: {len(jids - finished())} left\n"
                       f"{survivor.output()[-3000:]}")
    survivor.stop()

    spans = [(run.started, run.ended if run.ended is not None else killed_at)
             for run in runs(tmp_path)]
    peak = most_at_once(spans)
    print(f"\nconcurrent(2) over 2 processes x 10 threads: {len(spans)} runs, at most {peak} "
          f"at once; {len(cut)} run(s) cut by the SIGKILL, the dead process's slot(s) "
          "released by recovery (the lease is 600 s)")
    assert peak <= 2
    assert cut, "the kill cut no run"
    # The lease is 600 s: only recovery can have given the dead process's slots back.
    assert "limiter slot(s) held by dead process" in survivor.output()
    assert {run.jid for run in cut} <= finished()


def test_a_five_per_second_window_holds_over_ten_seconds(
        redis_url: str, tmp_path: Path, app_worker: StartAppWorker,
        make_client: MakeClient) -> None:
    """A sliding window of 5 per 1 s: any 1 s of admissions holds at most 5. The ledger
    stamps each start a moment after its admission (on a loaded machine, up to tens of
    ms), so the ledger is checked over spans of 0.8 s, which only that delay beyond 0.2 s
    could make hold a sixth start of the same second."""
    workers = [app_worker(APP, redis_url, "-c", "10", poll_interval=0.1) for _ in range(2)]
    client = make_client(redis_url)
    jids = {client.push({"class": "Metered", "args": []}) for _ in range(55)}

    wait_until(lambda: {run.jid for run in runs(tmp_path)} >= jids, 60,
               lambda: f"not every job ran:\n{workers[0].output()[-3000:]}")
    for worker in workers:
        worker.stop()

    stamps = [run.started for run in runs(tmp_path)]
    elapsed = max(stamps) - min(stamps)
    per_second = most_in_span(stamps, 1.0)
    print(f"\nwindow(5 per 1 s, sliding) over 2 processes x 10 threads: {len(stamps)} jobs in "
          f"{elapsed:.2f} s = {(len(stamps) - 1) / elapsed:.2f}/s measured; at most "
          f"{per_second} in any 1 s of the ledger, {most_in_span(stamps, 0.8)} in any 0.8 s")
    assert elapsed >= 10.0  # 55 admissions at 5 a second take at least 10 s
    assert most_in_span(stamps, 0.8) <= 5
