"""``--cpu-affinity`` on real processes: what the kernel says each thread may run on.

Every thread's ``Cpus_allowed_list`` (``/proc/<pid>/task/<tid>/status``) is read while the
worker runs. The expected CPUs come from this process's own allowed set, which a child
inherits, so the tests hold on a one-CPU machine too.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
import redis

from cogworker.app import App
from cogworker.core.cpu_affinity import cpu_ranges
from cogworker.redis.keys import KeySchema
from delivery.supervised import kill_all_children, started_children, wait_children_started
from helpers.workers import WorkerProcess, wait_until, write_app
from runtime.support import StartWorker, wait_exit
from runtime.test_health import HEALTH_APP

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="CPU pinning is Linux-only"),
]


def thread_cpus(pid: int) -> dict[int, str]:
    """Each live thread of process ``pid``: its ``Cpus_allowed_list`` (``0-1``, ``1``)."""
    found: dict[int, str] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text(encoding="ascii")
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        for line in status.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                found[int(task.name)] = line.partition(":")[2].strip()
    return found


def own_cpus() -> str:
    """This process's ``Cpus_allowed_list``: what an unpinned child has."""
    return thread_cpus(os.getpid())[os.getpid()]


def allowed() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def hold_a_job(pusher: App, tmp_path: Path) -> tuple[Path, Path]:
    started, release = tmp_path / "started", tmp_path / "release"
    pusher.push({"class": "Hold", "args": [str(started), str(release)]})
    return started, release


def test_a_burst_worker_with_auto_pins_every_thread_to_the_first_allowed_cpu(
    start_worker: StartWorker, pusher: App, tmp_path: Path,
) -> None:
    started, release = hold_a_job(pusher, tmp_path)
    worker = start_worker(HEALTH_APP, "--burst", "-c", "4", "--cpu-affinity", "auto")
    wait_until(started.exists, 30, lambda: f"the job never started:\n{worker.output()}")
    threads = thread_cpus(worker.pid)
    release.touch()
    assert wait_exit(worker) == 0, worker.output()
    assert len(threads) > 4  # the main thread, 4 processor threads, heartbeat, poller...
    assert set(threads.values()) == {str(allowed()[0])}, threads
    assert f"pinned every thread to CPU {allowed()[0]} (cpu_affinity=auto, slot 0;" \
        in worker.output()


def test_a_worker_with_the_default_leaves_every_thread_as_it_was(
    start_worker: StartWorker, pusher: App, tmp_path: Path,
) -> None:
    started, release = hold_a_job(pusher, tmp_path)
    worker = start_worker(HEALTH_APP, "--burst", "-c", "4")
    wait_until(started.exists, 30, lambda: f"the job never started:\n{worker.output()}")
    threads = thread_cpus(worker.pid)
    release.touch()
    assert wait_exit(worker) == 0, worker.output()
    assert len(threads) > 4
    assert set(threads.values()) == {own_cpus()}, threads
    assert "pinned every thread" not in worker.output()


def test_a_supervisors_children_are_pinned_by_slot_and_a_replacement_keeps_its_cpu(
    start_worker: StartWorker,
) -> None:
    cpus = allowed()
    supervisor = start_worker(HEALTH_APP, "-P", "2", "--cpu-affinity", "auto")
    try:
        wait_children_started(supervisor, 2)
        children = {slot: pid for pid, slot, _identity in started_children(supervisor)}
        assert sorted(children) == [0, 1]
        for slot, pid in children.items():
            assert set(thread_cpus(pid).values()) == {str(cpus[slot % len(cpus)])}, slot
        assert set(thread_cpus(supervisor.pid).values()) == {own_cpus()}
        assert "(cpu_affinity=auto, slot 1;" in supervisor.output()

        os.kill(children[1], signal.SIGKILL)
        wait_children_started(supervisor, 3)
        [(replacement, slot, _identity)] = started_children(supervisor)[2:]
        assert slot == 1
        assert set(thread_cpus(replacement).values()) == {str(cpus[1 % len(cpus)])}
        assert supervisor.stop() == 0, supervisor.output()
    finally:
        kill_all_children(supervisor)


def test_a_listed_cpu_outside_the_allowed_set_stops_the_worker_before_it_fetches(
    start_worker: StartWorker, pusher: App, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    stray = max(allowed()) + 1
    jid = pusher.push({"class": "Work", "args": ["kept"]})
    worker = start_worker(HEALTH_APP, "--burst", "--cpu-affinity", f"0,{stray}", wait=False)
    assert wait_exit(worker) == 2, worker.output()
    assert f"CPU {stray} is not among them" in worker.output()
    assert f"may run on ({cpu_ranges(allowed())})" in worker.output()
    assert " started identity=" not in worker.output()
    queued = redis_client.lrange(keys.queue("default"), 0, -1)
    assert len(queued) == 1 and jid is not None and jid.encode() in queued[0]


def test_a_supervisor_refuses_a_cpu_outside_the_allowed_set_before_any_child(
    start_worker: StartWorker,
) -> None:
    stray = max(allowed()) + 1
    supervisor = start_worker(HEALTH_APP, "-P", "2", "--cpu-affinity", str(stray), wait=False)
    assert wait_exit(supervisor) == 2, supervisor.output()
    assert f"CPU {stray} is not among them" in supervisor.output()
    assert started_children(supervisor) == []



def test_the_private_redis_server_a_pinned_worker_starts_is_not_pinned(
    redis_project_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("REDIS_URL", "COGWORKER_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    write_app(redis_project_dir, HEALTH_APP)
    worker = WorkerProcess(redis_project_dir, "jobapp:app",
                           ["--burst", "--cpu-affinity", "auto"]).start()
    try:
        assert wait_exit(worker) == 0, worker.output()
    finally:
        worker.close()
    assert "pinned every thread to CPU" in worker.output()
    state = json.loads((redis_project_dir / ".cogworker" / "redis" / "server.json").read_text())
    assert thread_cpus(state["pid"])[state["pid"]] == own_cpus()
