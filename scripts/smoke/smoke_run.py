"""One compatibility smoke run, inside a virtualenv that has only ``pip install cogworker``.

    python smoke_run.py REDIS_SERVER_BINARY URL_SUFFIX...

For each URL suffix ("" for a plain URL, "?protocol=3"...): a private redis-server, the
pushes a user makes (``perform_async`` three times, ``perform_in``, ``push_bulk``, a unique
job twice, a job that pushes from inside the worker), then ``cogworker run`` until the cron
entry has ticked and every job has run, then SIGTERM. Prints one line per suffix; exits 1
if any of them failed. Run by ``scripts/compat_smoke.py``, which builds the virtualenvs.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = {"async-1", "async-2", "async-3", "in", "bulk-1", "bulk-2", "bulk-3", "unique",
            "relayed-1", "relayed-2", "cron"}
DEADLINE = float(os.environ.get("CW_SMOKE_DEADLINE", "60"))
# Worker log lines that mean something went wrong, even if every job ran in the end.
SUSPECT = ("Traceback", "ERROR", "WARNING", "not sent")


class Warnings(logging.Handler):
    """Every WARNING or worse that cogworker logs in this (the pushing) process."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def main(binary: str, suffixes: list[str]) -> int:
    from cogworker.redis.compat import installed
    from cogworker.redis.server import RedisServer

    print(f"    {installed().describe()}, Python {sys.version.split()[0]}", flush=True)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="cw-smoke-") as scratch:
        server = RedisServer(Path(scratch) / "redis", executable=binary, appendonly=False)
        with server:
            for suffix in suffixes:
                ok, summary = run_once(server.url + suffix, Path(scratch))
                failures += not ok
                print(f"    {'PASS' if ok else 'FAIL'} URL{suffix or ' (plain)'}: {summary}",
                      flush=True)
    return 1 if failures else 0


def run_once(url: str, scratch: Path) -> tuple[bool, str]:
    run_dir = scratch / uuid.uuid4().hex[:8]
    run_dir.mkdir()
    ledger = run_dir / "ledger"
    ledger.touch()
    env = {**os.environ, "COGWORKER_REDIS_URL": url,
           "COGWORKER_NAMESPACE": f"smoke-{run_dir.name}",
           "CW_SMOKE_LEDGER": str(ledger), "COGWORKER_POLL_INTERVAL": "0.5",
           "COGWORKER_PLUGIN_OPTIONS": '{"periodic": {"tick_interval": 0.2}}',
           "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    os.environ.update(env)
    problems = enqueue()
    log_path = run_dir / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            [str(Path(sys.executable).with_name("cogworker")), "run", "-A", "smokeapp:app",
             "-c", "4"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=run_dir)
        seen = wait_for(ledger, worker)
        worker.send_signal(signal.SIGTERM)
        try:
            status = worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            status = worker.wait()
    missing = sorted(EXPECTED - seen)
    if missing:
        problems.append(f"never ran: {', '.join(missing)}")
    if status != 0:
        problems.append(f"worker exited with {status}")
    suspect = [line for line in log_path.read_text(errors="replace").splitlines()
               if any(word in line for word in SUSPECT)]
    problems += [f"worker log: {line}" for line in suspect[:5]]
    summary = (f"{len(EXPECTED & seen)}/{len(EXPECTED)} labels ran, worker exit {status}"
               + "".join(f"\n        {problem}" for problem in problems))
    if problems and os.environ.get("CW_SMOKE_SHOW_LOG"):
        print(log_path.read_text(errors="replace"))
    return not problems, summary


def enqueue() -> list[str]:
    """Push everything from this process; the problems seen (exceptions, warnings)."""
    for name in [name for name in sys.modules if name == "smokeapp"]:
        del sys.modules[name]  # a fresh App for this URL
    import smokeapp

    warnings = Warnings()
    logging.getLogger("cogworker").addHandler(warnings)
    problems: list[str] = []
    steps: list[tuple[str, Callable[[], list[str | None]]]] = [
        ("perform_async", lambda: [smokeapp.record.perform_async(f"async-{n}")
                                   for n in (1, 2, 3)]),
        ("perform_in", lambda: [smokeapp.record.perform_in(1, "in")]),
        ("push_bulk", lambda: smokeapp.app.push_bulk(smokeapp.record,
                                                     [["bulk-1"], ["bulk-2"], ["bulk-3"]])),
        ("unique", lambda: [smokeapp.record_once.perform_async("unique")]),
        ("relay", lambda: [smokeapp.relay.perform_async("relayed")]),
    ]
    for name, step in steps:
        try:
            jids = step()
        except Exception as exc:
            problems.append(f"{name} raised {type(exc).__name__}: {exc}")
            continue
        if not all(jids):
            problems.append(f"{name} returned {jids!r}")
    try:
        again = smokeapp.record_once.perform_async("unique")
    except Exception as exc:
        problems.append(f"unique (second push) raised {type(exc).__name__}: {exc}")
    else:
        if again is not None:
            problems.append("a second unique push was accepted while the first was queued")
    smokeapp.app.close()
    logging.getLogger("cogworker").removeHandler(warnings)
    problems += [f"warning while pushing: {message}" for message in warnings.messages]
    return problems


def wait_for(ledger: Path, worker: subprocess.Popen[bytes]) -> set[str]:
    deadline = time.monotonic() + DEADLINE
    seen: set[str] = set()
    while time.monotonic() < deadline and worker.poll() is None:
        seen = set(ledger.read_text().split())
        if seen >= EXPECTED:
            break
        time.sleep(0.2)
    return seen


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:] or [""]))
