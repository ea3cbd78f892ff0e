"""Issue 14 against real worker processes: --burst, the start-up lines, no jobs, the
ordering of plugin job options, `ctl list` after a quiet, `busy --watch`, a wrong password,
and admin commands that never start a redis-server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.redis_servers import RedisServerFactory
from helpers.workers import Ledger, WorkerProcess, wait_until, write_app
from runtime.support import (
    APP_HEADER,
    STARTED,
    WORK_JOBS,
    StartWorker,
    cogworker_cli,
    identity_of,
    payload,
    push_raw,
    wait_exit,
)

pytestmark = pytest.mark.slow

CRON_JOBS = WORK_JOBS + """

app.periodic("*/5 * * * *", Work, args=["tick"])
"""

TENANT_PLUGIN = """
import cogworker

@cogworker.hookimpl
def cogworker_job_options():
    return ["tenant"]
"""


def test_burst_processes_what_is_due_then_exits_zero(
    start_worker: StartWorker, ledger: Ledger, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    jids = [new_jid() for _ in range(5)]
    push_raw(redis_client, keys, "default", *(payload("Work", [n], "default", jid)
                                              for n, jid in enumerate(jids)))
    due, later = new_jid(), new_jid()
    redis_client.zadd(keys.retry, {payload("Work", ["due"], "default", due): time.time() - 1,
                                   payload("Work", ["later"], "default", later):
                                       time.time() + 3600})

    worker = start_worker(WORK_JOBS, "--burst", wait=False)

    assert wait_exit(worker, 30) == 0
    assert sorted(event.jid for event in ledger.events("ran")) == sorted([*jids, due])
    assert redis_client.llen(keys.queue("default")) == 0
    assert redis_client.zcard(keys.retry) == 1  # the one due in an hour stays
    assert "burst: the queues are empty and nothing is due; stopping" in worker.output()


def test_burst_with_nothing_to_do_exits_at_once(start_worker: StartWorker) -> None:
    worker = start_worker(WORK_JOBS, "--burst", wait=False)
    assert wait_exit(worker, 30) == 0


def test_the_startup_lines_name_the_jobs_and_the_cron_entries(
    start_worker: StartWorker,
) -> None:
    worker = start_worker(CRON_JOBS)
    worker.wait_for_output("cron entries (1): ")
    assert worker.stop() == 0
    log = worker.output()
    assert "jobs (2): Slow, Work" in log
    assert "cron entries (1): '*/5 * * * *' Work [\"tick\"] queue=default pjid=" in log
    started = log.index(STARTED)
    assert started < log.index("jobs (2)") < log.index("cron entries (1)")


def test_run_without_jobs_refuses_unless_told(
    start_worker: StartWorker, tmp_path: Path, redis_url: str, namespace: str,
) -> None:
    refused = cogworker_cli("run", "--redis-url", redis_url, "--namespace", namespace)
    assert refused.returncode == 2
    assert "no jobs are registered (no app was given): pass -A module:app" in refused.stderr
    assert "--allow-no-jobs" in refused.stderr

    draining = start_worker(APP_HEADER, "--allow-no-jobs", "--burst", wait=False)
    assert wait_exit(draining, 30) == 0
    assert "jobs (0): none registered" in draining.output()


def test_a_plugin_option_given_by_flag_works_and_a_typo_fails_early(
    tmp_path: Path, redis_url: str, namespace: str, ledger: Ledger,
) -> None:
    (tmp_path / "tenant_options.py").write_text(TENANT_PLUGIN, encoding="utf-8")
    body = APP_HEADER + textwrap.dedent('''
        @app.job(name="Bill", tenant="acme")
        def bill():
            record("-", "Bill", "ran")
        ''')
    write_app(tmp_path, body)
    base = ["--redis-url", redis_url, "--namespace", namespace, "--burst"]
    env = {"COGWORKER_TEST_LEDGER": str(ledger.path)}

    worker = WorkerProcess(tmp_path, "jobapp:app", ["--plugin", "tenant_options:", *base],
                           env=env).start()
    assert wait_exit(worker, 30) == 0, worker.output()  # decorated before --plugin applied

    without = WorkerProcess(tmp_path, "jobapp:app", base, env=env).start()
    assert wait_exit(without, 30) == 2
    assert "job 'Bill' (" in without.output() and "jobapp.py:" in without.output()
    assert "unknown option 'tenant'" in without.output()

    write_app(tmp_path, body.replace('tenant="acme"', 'tenent="acme"'))
    typo = WorkerProcess(tmp_path, "jobapp:app", ["--plugin", "tenant_options:", *base],
                         env=env).start()
    assert wait_exit(typo, 30) == 2
    assert "unknown option 'tenent'; did you mean 'tenant'?" in typo.output()
    assert STARTED not in typo.output()


def test_ctl_list_shows_a_quiet_at_once(
    start_worker: StartWorker, redis_url: str, namespace: str,
) -> None:
    worker = start_worker(WORK_JOBS.replace("heartbeat_interval=0.3",
                                            "heartbeat_interval=30, heartbeat_ttl=60"))
    identity = identity_of(worker)
    common = ("--redis-url", redis_url, "--namespace", namespace)
    wait_until(lambda: "Received" not in worker.output() and cogworker_cli(
        "ctl", "quiet", identity, *common).returncode == 0, 20, worker.output)

    listed = cogworker_cli("ctl", "list", "--json", *common)

    assert [(p["identity"], p["quiet"]) for p in json.loads(listed.stdout)] == [(identity, True)]
    resumed = cogworker_cli("ctl", "resume", identity, *common)
    assert "pending" not in resumed.stderr
    again = json.loads(cogworker_cli("ctl", "list", "--json", *common).stdout)
    assert again[0]["quiet"] is False
    assert worker.stop() == 0


def test_busy_shows_the_running_job_and_watch_stops_on_ctrl_c(
    start_worker: StartWorker, ledger: Ledger, redis_client: redis.Redis, keys: KeySchema,
    redis_url: str, namespace: str,
) -> None:
    jid = new_jid()
    worker = start_worker(WORK_JOBS)
    push_raw(redis_client, keys, "default", payload("Slow", [30], "default", jid))
    wait_until(lambda: ledger.count("start") == 1, 15, worker.output)
    common = ["--redis-url", redis_url, "--namespace", namespace]

    def shown() -> bool:
        return jid in cogworker_cli("busy", *common).stdout

    wait_until(shown, 15, worker.output)  # the next heartbeat publishes it
    text = cogworker_cli("workers", *common).stdout
    data = json.loads(cogworker_cli("busy", "--json", *common).stdout)

    line = next(line for line in text.splitlines() if jid in line)
    assert line.split()[:3] == [jid, "Slow", "default"]
    assert identity_of(worker) in text and "busy 1/10" in text
    assert data[0]["jobs"][0]["jid"] == jid and data[0]["jobs"][0]["runtime"] >= 0

    watch = subprocess.Popen([sys.executable, "-m", "cogworker", "busy", "--watch",
                              "--interval", "0.2", *common], stdout=subprocess.PIPE, text=True)
    assert watch.stdout is not None
    frames = 0
    while frames < 2:
        if "(every 0.2s; Ctrl-C to stop)" in watch.stdout.readline():
            frames += 1
    watch.send_signal(signal.SIGINT)
    assert watch.wait(20) == 0
    worker.kill()


def test_a_wrong_password_stops_start_up_and_names_the_setting(
    redis_server_factory: RedisServerFactory, tmp_path: Path, ledger: Ledger,
) -> None:
    server = redis_server_factory(appendonly=False, extra_args=("--requirepass", "right"))
    url = f"redis://:wrong@127.0.0.1:{server.port}/0"
    write_app(tmp_path, WORK_JOBS)
    worker = WorkerProcess(tmp_path, "jobapp:app", [],
                           env={"COGWORKER_REDIS_URL": url,
                                "COGWORKER_TEST_LEDGER": str(ledger.path)}).start()

    assert wait_exit(worker, 30) == 1
    log = worker.output()
    assert "refused to authenticate" in log
    assert (f"redis://127.0.0.1:{server.port}/0 (setting redis_url, from the environment "
            "variable COGWORKER_REDIS_URL)") in log
    assert "wrong" not in log.replace("wrong password", "")  # the password is never shown
    assert STARTED not in log

    stats = cogworker_cli("stats", "--redis-url", url)
    assert stats.returncode == 1
    assert "(setting redis_url, from the command-line flag --redis-url) refused to " \
           "authenticate" in stats.stderr


def test_a_worker_waiting_for_redis_says_where_the_url_came_from(
    start_worker: StartWorker,
) -> None:
    worker = start_worker(WORK_JOBS, url="redis://127.0.0.1:1/0", wait=False)
    worker.wait_for_output("waiting for the broker at redis://127.0.0.1:1/0 (setting redis_url, "
                           "from the command-line flag --redis-url): ")
    worker.signal(signal.SIGTERM)
    assert wait_exit(worker, 20) == 0


def test_an_unreachable_redis_names_the_setting_and_its_file(tmp_path: Path) -> None:
    (tmp_path / "cogworker.toml").write_text('redis_url = "redis://127.0.0.1:1/0"\n')
    result = subprocess.run([sys.executable, "-m", "cogworker", "stats"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert (f"cannot reach Redis at redis://127.0.0.1:1/0 (setting redis_url, from the "
            f"config file {tmp_path / 'cogworker.toml'})") in result.stderr


def test_admin_commands_never_start_a_redis_server(
    redis_project_dir: Path, redis_server_binary: str,
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "COGWORKER_REDIS_URL")}
    for command in (["stats"], ["queues"], ["retry", "list"], ["ctl", "list"], ["busy"]):
        result = subprocess.run([sys.executable, "-m", "cogworker", *command],
                                cwd=redis_project_dir, env=env, capture_output=True, text=True,
                                timeout=60, check=False)
        assert result.returncode == 1, result
        assert "no private redis-server runs for" in result.stderr
        assert "cogworker redis start" in result.stderr
    assert not (redis_project_dir / ".cogworker" / "redis" / "server.json").exists()

    started = cogworker_cli("redis", "start", "--project-dir", str(redis_project_dir))
    assert started.returncode == 0
    stats = subprocess.run([sys.executable, "-m", "cogworker", "stats", "--json"],
                           cwd=redis_project_dir, env=env, capture_output=True, text=True,
                           timeout=60, check=False)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["processed"] == 0  # the running private server is used
