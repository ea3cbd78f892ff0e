"""Workflows with real worker processes: a chain of three end to end, and a step SIGKILLed
while it runs or between its success and its ack, after which the chain still completes
and the next step runs exactly once (counted in a ledger outside Redis)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

import cogworker
from cogworker.core.job import JobFunction
from cogworker.plugins.workflows_names import CHORD_UNLOCK, GROUP_LAUNCH
from cogworker.redis.keys import KeySchema
from cogworker.workflows import WorkflowFailedError, WorkflowResult, chain, chord, group
from delivery.conftest import APP_HEADER, StartAppWorker
from delivery.support import held_payloads
from helpers.workers import Ledger, wait_until

pytestmark = pytest.mark.slow

WAIT = 60.0

JOBS = APP_HEADER + '''
import signal

from cogworker import hookimpl


def _flag(name):
    return os.path.join(os.environ["TEST_DIR"], name)


@app.job(name="add")
def add(x, y):
    record("add", "add", "start")
    return x + y


@app.job(name="slow_double")
def slow_double(x):
    record("slow_double", "slow_double", "start", x)
    # The first run waits here until the test has killed its process.
    while os.path.exists(_flag("hold")) and not os.path.exists(_flag("held")):
        time.sleep(0.02)
    return 2 * x


@app.job(name="describe")
def describe(x, label):
    record("describe", "describe", "start", x)
    return {"label": label, "value": x}


@app.job(name="makes_set")
def makes_set():
    record("makes_set", "makes_set", "start")
    return {1, 2}


@app.job(name="breaks", retry=False)
def breaks(x):
    record("breaks", "breaks", "start", x)
    raise ValueError("cannot take %r" % x)


@app.job(name="square")
def square(x):
    record("square", "square", "start", x)
    return x * x


@app.job(name="total")
def total(values):
    record("total", "total", "start", len(values))
    return sum(values)


@hookimpl(tryfirst=True)
def cogworker_server_middleware(app):
    """Outside every other middleware: the first job of the class named in the flag file
    "kill-after" dies by SIGKILL once it finished (its step too), before its ack."""
    def kill_after_success(ctx, call_next):
        result = call_next()
        try:
            with open(_flag("kill-after")) as file:
                doomed = file.read().strip()
        except FileNotFoundError:
            return result
        if ctx.job.get("class") == doomed:
            os.remove(_flag("kill-after"))
            record(doomed, doomed, "killed-after-success")
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    return kill_after_success
'''


@dataclass
class Client:
    """The pushing side: the same job names and parameters as the workers' app."""

    app: cogworker.App
    add: JobFunction[[int, int], int]
    slow_double: JobFunction[[int], int]
    describe: JobFunction[[int, str], dict[str, object]]
    square: JobFunction[[int], int]
    total: JobFunction[[list[int]], int]
    makes_set: JobFunction[[], object]
    breaks: JobFunction[[int], int]

    def three_steps(self) -> WorkflowResult:
        return chain(self.add.s(1, 2), self.slow_double.s(),
                     self.describe.s(label="total")).apply_async()


@pytest.fixture
def client(redis_url: str, namespace: str) -> Iterator[Client]:
    app = cogworker.App(redis_url=redis_url, namespace=namespace)

    @app.job(name="add")
    def add(x: int, y: int) -> int:
        raise AssertionError("runs on the workers only")

    @app.job(name="slow_double")
    def slow_double(x: int) -> int:
        raise AssertionError("runs on the workers only")

    @app.job(name="describe")
    def describe(x: int, label: str) -> dict[str, object]:
        raise AssertionError("runs on the workers only")

    @app.job(name="square")
    def square(x: int) -> int:
        raise AssertionError("runs on the workers only")

    @app.job(name="total")
    def total(values: list[int]) -> int:
        raise AssertionError("runs on the workers only")

    @app.job(name="makes_set")
    def makes_set() -> object:
        raise AssertionError("runs on the workers only")

    @app.job(name="breaks", retry=False)  # options come from the pushing side's declaration
    def breaks(x: int) -> int:
        raise AssertionError("runs on the workers only")

    try:
        yield Client(app, add, slow_double, describe, square, total, makes_set, breaks)
    finally:
        app.close()


def starts(ledger: Ledger, name: str, pid: int | None = None) -> int:
    return sum(1 for event in ledger.events("start")
               if event.name == name and pid in (None, event.pid))


def test_a_chain_of_three_runs_end_to_end_on_a_worker_process(
        redis_url: str, ledger: Ledger, app_worker: StartAppWorker,
        client: Client) -> None:
    worker = app_worker(JOBS, redis_url, "-c", "2", "--plugin", "jobapp:")

    workflow = client.three_steps()

    assert workflow.get(timeout=WAIT) == {"label": "total", "value": 6}, worker.output()[-3000:]
    assert [starts(ledger, name) for name in ("add", "slow_double", "describe")] == [1, 1, 1]
    assert worker.stop() == 0


def test_a_step_killed_while_it_runs_runs_again_and_the_chain_completes_once(
        redis_url: str, ledger: Ledger, app_worker: StartAppWorker, client: Client,
        tmp_path: Path, redis_client: redis.Redis, keys: KeySchema) -> None:
    (tmp_path / "hold").touch()
    first = app_worker(JOBS, redis_url, "-c", "1", "--plugin", "jobapp:")
    workflow = client.three_steps()
    # Killed only once add's ack is written: a job finished just before a kill whose ack
    # had not reached Redis runs again, as docs/explanation/delivery.md allows.
    wait_until(lambda: starts(ledger, "slow_double") == 1
               and [job["class"] for job in held_payloads(redis_client, keys)]
               == ["slow_double"],
               WAIT, lambda: first.output()[-3000:])

    first.kill()
    (tmp_path / "held").touch()
    second = app_worker(JOBS, redis_url, "-c", "2", "--plugin", "jobapp:")

    assert workflow.get(timeout=WAIT) == {"label": "total", "value": 6}, \
        second.output()[-3000:]
    assert [starts(ledger, name) for name in ("add", "slow_double", "describe")] == [1, 2, 1]
    assert second.stop() == 0
    assert [starts(ledger, name) for name in ("add", "slow_double", "describe")] == [1, 2, 1]


def test_a_step_killed_between_its_success_and_its_ack_pushes_the_next_step_once(
        redis_url: str, ledger: Ledger, app_worker: StartAppWorker, client: Client,
        tmp_path: Path) -> None:
    (tmp_path / "kill-after").write_text("slow_double")
    # one thread: nothing else can start in the process that is killed
    first = app_worker(JOBS, redis_url, "-c", "1", "--plugin", "jobapp:")
    workflow = client.three_steps()
    wait_until(lambda: ledger.count("killed-after-success") == 1, WAIT,
               lambda: first.output()[-3000:])
    assert first.process is not None
    first.process.wait(timeout=WAIT)

    second = app_worker(JOBS, redis_url, "-c", "2", "--plugin", "jobapp:")
    # the orphaned step runs again, finds its result stored, and pushes nothing
    wait_until(lambda: "had finished before this run" in second.output(), WAIT,
               lambda: second.output()[-3000:])

    assert workflow.get(timeout=WAIT) == {"label": "total", "value": 6}
    assert second.stop() == 0
    # slow_double ran twice (killed before its ack) and pushed describe once. add may have
    # run twice too: acks are written in batches, so the kill can land before add's ack;
    # that re-run also finds its result stored and pushes nothing.
    assert [starts(ledger, name) for name in ("slow_double", "describe")] == [2, 1]
    assert starts(ledger, "add") in (1, 2)
    record = workflow.state()
    assert record is not None and (record.state, record.finished) == ("succeeded", 3)


def test_a_chord_fans_out_to_two_workers_and_reduces_once(
        redis_url: str, ledger: Ledger, app_worker: StartAppWorker, client: Client,
        tmp_path: Path) -> None:
    # the chord's unlock step is killed after it pushed the callback, before its ack
    (tmp_path / "kill-after").write_text(CHORD_UNLOCK)
    first = app_worker(JOBS, redis_url, "-c", "4", "--plugin", "jobapp:")
    second = app_worker(JOBS, redis_url, "-c", "4", "--plugin", "jobapp:")

    workflow = chord(group(*(client.square.s(n) for n in range(20))),
                     client.total.s()).apply_async()

    assert workflow.get(timeout=WAIT) == sum(n * n for n in range(20)), \
        first.output()[-2000:] + second.output()[-2000:]
    wait_until(lambda: ledger.count("killed-after-success") == 1, WAIT,
               lambda: first.output()[-2000:])
    survivor = second if "killed-after-success" not in _pid_events(ledger, second.pid) \
        else first
    # the killed unlock runs again on the survivor, finds its result, and pushes nothing
    wait_until(lambda: "had finished before this run" in survivor.output(), WAIT,
               lambda: survivor.output()[-3000:])
    assert survivor.stop() == 0
    assert starts(ledger, "square") == 20
    # the callback was pushed once: the survivor ran it once (the killed process's other
    # threads may have started it too, before the kill: a crash's ordinary re-run)
    assert starts(ledger, "total", survivor.pid) == 1
    assert starts(ledger, "total") <= 2
    assert sorted(int(e.detail) for e in ledger.events("start") if e.name == "square") == \
        list(range(20))


def _pid_events(ledger: Ledger, pid: int) -> list[str]:
    return [event.event for event in ledger.events() if event.pid == pid]


def test_a_dying_step_or_a_result_that_is_not_json_stops_its_chain_at_that_step(
        redis_url: str, ledger: Ledger, app_worker: StartAppWorker, client: Client) -> None:
    worker = app_worker(JOBS, redis_url, "-c", "2")
    dies = chain(client.add.s(1, 2), client.breaks.s(), client.describe.s(label="x"))
    not_json = chain(client.makes_set.s(), client.describe.s(label="y"))

    died, unpassable = dies.apply_async(), not_json.apply_async()

    with pytest.raises(WorkflowFailedError) as first:
        died.get(timeout=WAIT)
    with pytest.raises(WorkflowFailedError) as second:
        unpassable.get(timeout=WAIT)
    assert (first.value.step, second.value.step) == (1, 0)
    assert "died: ValueError: cannot take 3" in str(first.value)
    assert "not JSON" in str(second.value)
    assert worker.stop() == 0
    assert "returned a result that is not JSON" in worker.output()
    assert [starts(ledger, name) for name in ("add", "breaks", "makes_set", "describe")] == [
        1, 1, 1, 0]


def test_a_group_inside_a_chain_whose_launch_is_killed_after_it_ran_starts_once(
        redis_url: str, ledger: Ledger, app_worker: StartAppWorker, client: Client,
        tmp_path: Path) -> None:
    (tmp_path / "kill-after").write_text(GROUP_LAUNCH)
    first = app_worker(JOBS, redis_url, "-c", "1", "--plugin", "jobapp:")
    workflow = chain(client.add.s(1, 2), group(*(client.square.s() for _ in range(5))),
                     client.total.s()).apply_async()
    wait_until(lambda: ledger.count("killed-after-success") == 1, WAIT,
               lambda: first.output()[-3000:])
    assert first.process is not None
    first.process.wait(timeout=WAIT)

    second = app_worker(JOBS, redis_url, "-c", "2", "--plugin", "jobapp:")

    try:
        result = workflow.get(timeout=WAIT)
    except Exception as exc:  # a timeout: what the workers said is what to read
        raise AssertionError(f"the workflow did not finish ({exc!r}); the second worker "
                             f"said:\n{second.output()[-3000:]}\nthe first worker said:\n"
                             f"{first.output()[-2000:]}") from exc
    assert result == 5 * 9, second.output()[-3000:]
    wait_until(lambda: "was started before; not again" in second.output(), WAIT,
               lambda: second.output()[-3000:])
    assert second.stop() == 0
    assert [starts(ledger, name) for name in ("square", "total")] == [5, 1], (
        f"{ledger.events()}\nfirst ({first.pid}):\n{first.output()[-3000:]}\nsecond "
        f"({second.pid}):\n{second.output()[-6000:]}")
    # add may have run twice: its ack is written in a batch off the thread, so the kill can
    # land before it (the launch started at once, fetched ahead); the re-run is the second
    # worker's, finds add's result stored, and pushes nothing
    assert starts(ledger, "add", first.pid) == 1
    assert starts(ledger, "add") in (1, 2)
