"""The delivery-contract harness: an app of test jobs, a fleet of real worker processes, and
the reading of the ledger (kept outside the Redis under test).

Every job writes ``start`` and ``finish`` events by jid and pid into the ledger
(``tests/helpers/workers.py``). One *execution* is a start, paired with the finish of the same
jid in the same process when there is one. A test records every SIGKILL it sends (``Kill``),
so a second execution of a jid can be checked against the kills that explain it.
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

import cogworker
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from helpers.workers import Ledger, WorkerProcess, wait_until, write_app

APP = """
    import os
    import time

    import cogworker
    from ledger_client import record

    app = cogworker.App(redis_url=os.environ["TEST_REDIS_URL"],
                        namespace=os.environ["TEST_NAMESPACE"])


    @app.job(name="Work")
    class Work(cogworker.Job):
        def perform(self, tag, seconds):
            record(self.jid, "Work", "start", tag)
            time.sleep(seconds)
            record(self.jid, "Work", "finish", tag)


    @app.job(name="Stamp")
    class Stamp(cogworker.Job):
        # The pickup-latency probe: the start time is taken before anything else.
        def perform(self, enqueued_at):
            started = time.time()
            record(self.jid, "Stamp", "start", repr(started))
            record(self.jid, "Stamp", "finish")


    @app.job(name="Gated")
    class Gated(cogworker.Job):
        # Runs until the test creates the file <TEST_GATES>/<pid> for this process.
        def perform(self, tag):
            record(self.jid, "Gated", "start", tag)
            gate = os.path.join(os.environ["TEST_GATES"], str(os.getpid()))
            deadline = time.monotonic() + 110
            while not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.02)
            record(self.jid, "Gated", "finish", tag)


    @app.job(name="Poison")
    class Poison(cogworker.Job):
        # Kills its own process every time it runs, as an out-of-memory kill would.
        def perform(self):
            record(self.jid, "Poison", "start")
            os._exit(1)
    """

FAST_RECOVERY: dict[str, object] = {
    "heartbeat_interval": 0.5,
    "heartbeat_ttl": 2.0,
    "orphan_threshold": 2.0,
    "orphan_check_interval": 1.0,
    "poll_interval": 0.5,
    "timeout": 5.0,
}
"""Settings that make a killed process's jobs come back within a few seconds."""

_IDENTITY = re.compile(r" started identity=(\S+) pid=(\d+)")


@dataclass(frozen=True)
class Kill:
    """One SIGKILL the test sent: which process, and when (epoch seconds)."""

    pid: int
    at: float


@dataclass
class Execution:
    """One run of a job: its start, and its finish when the process recorded one."""

    jid: str
    pid: int
    started: float
    finished: float | None = None
    detail: str = ""


def settings_env(settings: Mapping[str, object]) -> dict[str, str]:
    """``{"orphan_threshold": 2}`` → ``{"COGWORKER_ORPHAN_THRESHOLD": "2"}``."""
    return {f"COGWORKER_{name.upper()}": str(value) for name, value in settings.items()}


@dataclass
class Fleet:
    """``cogworker run`` processes on one Redis and namespace, writing to one ledger."""

    directory: Path
    redis_url: str
    namespace: str
    ledger: Ledger
    settings: Mapping[str, object]
    workers: list[WorkerProcess] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)

    @property
    def gates(self) -> Path:
        return self.directory / "gates"

    def start(self, *args: str, wait: bool = True, **overrides: object) -> WorkerProcess:
        """Start one worker (settings: the fleet's, then ``overrides``); ``wait`` for its
        start-up line."""
        env = {"TEST_REDIS_URL": self.redis_url, "TEST_NAMESPACE": self.namespace,
               "COGWORKER_TEST_LEDGER": str(self.ledger.path), "TEST_GATES": str(self.gates),
               **settings_env({**self.settings, **overrides})}
        worker = WorkerProcess(self.directory, "jobapp:app", args, env=env).start()
        self.workers.append(worker)
        if wait:
            worker.wait_for_output(" started identity=")
        return worker

    def kill(self, worker: WorkerProcess) -> Kill:
        """SIGKILL ``worker`` and remember when."""
        worker.kill()
        kill = Kill(worker.pid, time.time())  # after the signal: a job may start until then
        self.kills.append(kill)
        return kill

    def open_gate(self, worker: WorkerProcess) -> None:
        """Let the ``Gated`` jobs of ``worker`` finish."""
        self.gates.mkdir(exist_ok=True)
        (self.gates / str(worker.pid)).touch()

    def stop_all(self) -> None:
        """SIGTERM every worker still running (once: a second SIGTERM that lands after the
        process restored its default handlers would kill it); each must exit 0.

        A worker started with ``wait=False`` may still be importing, before its handlers
        exist, where SIGTERM's default action ends it with -15; so each is first waited for
        until it has logged its start-up line."""
        stopping = [worker for worker in self.workers
                    if worker.process is not None and worker.process.poll() is None]
        for worker in stopping:
            worker.wait_for_output(" started identity=")
        for worker in stopping:
            worker.signal(signal.SIGTERM)
        for worker in stopping:
            assert worker.process is not None
            code = worker.process.wait(timeout=40)
            assert code == 0, f"worker {worker.pid} exited {code}:\n{worker.output()[-3000:]}"

    def close(self) -> None:
        for worker in self.workers:
            worker.close()

    def log_tails(self, chars: int = 2000) -> str:
        return "\n".join(f"--- worker pid {w.process.pid if w.process else '?'} ---\n"
                         f"{w.output()[-chars:]}" for w in self.workers)


def make_fleet(directory: Path, redis_url: str, namespace: str, ledger: Ledger,
               settings: Mapping[str, object]) -> Fleet:
    write_app(directory, APP)
    return Fleet(directory, redis_url, namespace, ledger, settings)


def identity_of(worker: WorkerProcess) -> str:
    """The identity a started worker logged (its in-progress list is named after it)."""
    match = _IDENTITY.search(worker.output())
    assert match is not None, f"no start-up line yet:\n{worker.output()[-2000:]}"
    return match.group(1)


# the client side ---------------------------------------------------------------------------
def client_app(redis_url: str, namespace: str) -> cogworker.App:
    """An App that only pushes; knows the test job names so ``push_bulk`` can use them."""
    app = cogworker.App(redis_url=redis_url, namespace=namespace)
    for name in ("Work", "Stamp", "Gated", "Poison"):
        app.job(name=name)(_stub)
    return app


def _stub(*args: Any) -> None:
    """Never run: the workers run the real jobs of ``APP``."""


def enqueue_work(app: cogworker.App, durations: Sequence[float]) -> list[str]:
    """Push one ``Work`` job per duration (tagged by index); returns their jids."""
    jids = app.push_bulk("Work", [[index, seconds] for index, seconds in enumerate(durations)])
    assert all(jid is not None for jid in jids)
    return [jid for jid in jids if jid is not None]


# the ledger ---------------------------------------------------------------------------------
def executions(ledger: Ledger) -> dict[str, list[Execution]]:
    """Every execution per jid, in start order. A finish closes the earliest open start of
    the same jid in the same process."""
    runs: dict[str, list[Execution]] = defaultdict(list)
    for event in ledger.events():
        if event.event == "start":
            runs[event.jid].append(Execution(event.jid, event.pid, event.at,
                                             detail=event.detail))
        elif event.event == "finish":
            open_runs = [run for run in runs[event.jid]
                         if run.pid == event.pid and run.finished is None]
            assert open_runs, f"finish without a start: {event}"
            open_runs[0].finished = event.at
    return dict(runs)


def running_in(ledger: Ledger, pid: int) -> bool:
    """Whether the ledger shows a job of process ``pid`` started and not finished. A test
    that kills a worker mid-job waits for this: a held job may not have started yet."""
    return any(run.pid == pid and run.finished is None
               for attempts in executions(ledger).values() for run in attempts)


def finished_jids(ledger: Ledger) -> set[str]:
    return {event.jid for event in ledger.events("finish")}


def wait_all_finished(ledger: Ledger, jids: Iterable[str], timeout: float,
                      fleet: Fleet) -> None:
    wanted = set(jids)
    wait_until(lambda: wanted <= finished_jids(ledger), timeout,
               lambda: f"{len(wanted - finished_jids(ledger))} of {len(wanted)} jobs never "
                       f"finished:\n{fleet.log_tails()}")


def assert_each_ran_once(runs: Mapping[str, list[Execution]], jids: Iterable[str]) -> None:
    """Every jid started exactly once and finished in that run (no loss, no duplicate)."""
    problems = {jid: [(r.pid, r.finished is not None) for r in runs.get(jid, [])]
                for jid in jids
                if len(runs.get(jid, [])) != 1 or runs[jid][0].finished is None}
    sample = dict(list(problems.items())[:10])
    assert not problems, f"{len(problems)} job(s) not run exactly once: {sample}"


def assert_each_ran_once_but_for_deaths(runs: Mapping[str, list[Execution]],
                                        jids: Iterable[str], dead_pids: Iterable[int]) -> int:
    """Every jid finished in its last run, and every earlier run was in a process that
    died afterwards (delivery.md: a job that finished just before its process died runs
    again when its acknowledgement had not reached Redis). Returns how many repeated."""
    dead = set(dead_pids)
    problems = {jid: [(r.pid, r.finished is not None) for r in runs.get(jid, [])]
                for jid in jids
                if not runs.get(jid) or runs[jid][-1].finished is None
                or any(r.pid not in dead for r in runs[jid][:-1])}
    sample = dict(list(problems.items())[:10])
    assert not problems, f"{len(problems)} job(s) lost or repeated without a death: {sample}"
    return sum(len(runs[jid]) > 1 for jid in jids)


def unexplained_repeats(runs: Mapping[str, list[Execution]],
                        kills: Sequence[Kill]) -> dict[str, list[Execution]]:
    """Jids run more than once where an earlier run was not in a process killed after it
    started (a repeat the kills cannot explain)."""
    killed_at = {kill.pid: kill.at for kill in kills}
    bad: dict[str, list[Execution]] = {}
    for jid, attempts in runs.items():
        for earlier in attempts[:-1]:
            kill = killed_at.get(earlier.pid)
            if kill is None or kill < earlier.started:
                bad[jid] = attempts
    return bad


def cut_short_outside_kills(runs: Mapping[str, list[Execution]],
                            kills: Sequence[Kill]) -> list[Execution]:
    """Runs that never finished although their process was not killed."""
    killed = {kill.pid for kill in kills}
    return [run for attempts in runs.values() for run in attempts
            if run.finished is None and run.pid not in killed]


# Redis state ---------------------------------------------------------------------------------
def inprogress_entries(client: redis.Redis, keys: KeySchema) -> dict[str, int]:
    """Every non-empty in-progress list of the namespace: identity → length."""
    prefix = keys.inprogress_prefix
    found: dict[str, int] = {}
    for key in client.scan_iter(match=prefix + "*", count=1000):
        length = int(client.llen(key))
        if length:
            found[as_text(key)[len(prefix):]] = length
    return found


def held_payloads(client: redis.Redis, keys: KeySchema) -> list[dict[str, Any]]:
    """The payloads on every in-progress list of the namespace, parsed."""
    return [json.loads(raw) for key in client.scan_iter(match=keys.inprogress_prefix + "*")
            for raw in client.lrange(key, 0, -1)]


def assert_drained(client: redis.Redis, keys: KeySchema, queues: Sequence[str] = ("default",),
                   *, dead: int = 0) -> None:
    """Nothing left anywhere: queues, in-progress lists, schedule, retry, unsettled; ``dead``
    entries in dead."""
    state = {
        **{f"queue {q}": int(client.llen(keys.queue(q))) for q in queues},
        "in progress": sum(inprogress_entries(client, keys).values()),
        "schedule": int(client.zcard(keys.sorted_set("schedule"))),
        "retry": int(client.zcard(keys.retry)),
        "dead": int(client.zcard(keys.dead)),
        "unsettled": int(client.llen(keys.unsettled)),
        "repeat_orphans": int(client.llen(keys.repeat_orphans)),
    }
    expected = {name: (dead if name == "dead" else 0) for name in state}
    assert state == expected


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` in (0, 1])."""
    ordered = sorted(values)
    rank = max(1, int(-(-fraction * len(ordered) // 1)))
    return ordered[rank - 1]
