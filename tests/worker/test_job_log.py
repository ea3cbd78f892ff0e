"""The job lines' fast path (no ``LogRecord``) and the CLI's buffered handler, in process.

The fast path must be invisible: the same text and JSON as a record gives, the logger's
level honoured, and any handler or filter of the user's sees a standard ``LogRecord``.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cogworker.cli.logging_setup import configure_logging
from cogworker.worker.job_log import JobLog
from cogworker.worker.log_buffer import MAX_BUFFERED, BufferedLineHandler
from cogworker.worker.log_format import JsonFormatter, TextFormatter
from helpers.workers import wait_until

# 2026-12-01T15:17:40.123456Z, chosen so that the millisecond and the rounding show.
FIXED_TIME = 1796138260.123456
JID = "0123456789abcdef01234567"
Install = Callable[..., tuple[BufferedLineHandler, io.StringIO]]
EXTRA = {"jid": JID, "queue": "default", "job_class": "Work"}


class RecordingHandler(logging.Handler):
    """A user's handler: keeps the records it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def job_logger() -> logging.Logger:
    """A logger under a root of its own, both outside logging's tree: pytest's capture
    handlers on the real root would otherwise be handlers of the user's."""
    root = logging.Logger("root", logging.WARNING)
    logger = logging.Logger("cogworker.job")
    logger.parent = root
    return logger


@pytest.fixture
def install(job_logger: logging.Logger) -> Iterator[Install]:
    """``install(formatter=None)``: the CLI's handler on the test root, at INFO."""
    handlers: list[BufferedLineHandler] = []

    def add(formatter: TextFormatter | JsonFormatter | None = None,
            ) -> tuple[BufferedLineHandler, io.StringIO]:
        stream = io.StringIO()
        handler = BufferedLineHandler(stream, formatter)
        handlers.append(handler)
        root = job_logger.parent
        assert root is not None
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        return handler, stream

    yield add
    for handler in handlers:
        handler.close()


def both_lines(log: JobLog) -> None:
    log.start("Work", JID, "default", EXTRA)
    log.done("Work", JID, "default", 12.345, EXTRA)


def written(handler: BufferedLineHandler, stream: io.StringIO) -> list[str]:
    handler.flush()
    return stream.getvalue().splitlines()


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: FIXED_TIME)


@pytest.mark.usefixtures("frozen_clock")
def test_the_text_lines_are_todays_lines(job_logger: logging.Logger, install: Install) -> None:
    handler, stream = install()
    both_lines(JobLog(job_logger))
    pid = os.getpid()
    assert written(handler, stream) == [
        f"2026-12-01T15:17:40.123Z pid={pid} INFO: start: Work jid={JID} queue=default",
        f"2026-12-01T15:17:40.123Z pid={pid} INFO: done: Work jid={JID} queue=default "
        "in 12.3 ms",
    ]


@pytest.mark.usefixtures("frozen_clock")
def test_the_json_lines_carry_the_job_fields(job_logger: logging.Logger, install: Install) -> None:
    handler, stream = install(JsonFormatter())
    both_lines(JobLog(job_logger))
    start, done = (json.loads(line) for line in written(handler, stream))
    assert list(start) == ["ts", "level", "pid", "logger", "message", "jid", "queue",
                           "job_class"]
    assert start == {"ts": 1796138260.123456, "level": "INFO", "pid": os.getpid(),
                     "logger": job_logger.name,
                     "message": f"start: Work jid={JID} queue=default", **EXTRA}
    assert done["message"] == f"done: Work jid={JID} queue=default in 12.3 ms"


@pytest.mark.parametrize("formatter", [TextFormatter, JsonFormatter])
@pytest.mark.parametrize("job_class", ["Wörk \"quoted\"\n", 42, None, ["a", 1]])
def test_the_fast_path_writes_what_a_record_would(
    job_logger: logging.Logger, install: Install, monkeypatch: pytest.MonkeyPatch,
    formatter: type[TextFormatter | JsonFormatter], job_class: object,
) -> None:
    monkeypatch.setattr(time, "time", lambda: FIXED_TIME)
    extra = {**EXTRA, "job_class": job_class}
    handler, stream = install(formatter())
    JobLog(job_logger).done(job_class, JID, "default", 0.05, extra)
    record = job_logger.makeRecord(job_logger.name, logging.INFO, __file__, 1,
                                   "done: %s jid=%s queue=%s in %.1f ms",
                                   (job_class, JID, "default", 0.05), None, extra=extra)
    record.created = FIXED_TIME
    handler.flush()
    assert stream.getvalue() == formatter().format(record) + "\n"


@pytest.mark.parametrize("users_handler", [False, True])
@pytest.mark.parametrize("where", ["logger", "root", "disable", "handler"])
def test_a_level_above_info_writes_no_job_line(job_logger: logging.Logger, install: Install,
                                              where: str, users_handler: bool) -> None:
    handler, stream = install()
    user = RecordingHandler()
    if users_handler:
        job_logger.addHandler(user)
    if where == "logger":
        job_logger.setLevel(logging.WARNING)
    elif where == "root":
        assert job_logger.parent is not None
        job_logger.parent.setLevel(logging.WARNING)
    elif where == "disable":
        logging.disable(logging.INFO)
    else:
        handler.setLevel(logging.WARNING)
        user.setLevel(logging.WARNING)
    try:
        both_lines(JobLog(job_logger))
    finally:
        logging.disable(logging.NOTSET)
    assert written(handler, stream) == []
    assert user.records == []


def test_a_users_handler_gets_standard_records_and_the_output_is_unchanged(
    job_logger: logging.Logger, install: Install,
) -> None:
    handler, stream = install()
    user = RecordingHandler()
    job_logger.addHandler(user)
    both_lines(JobLog(job_logger))
    start, done = user.records
    assert isinstance(start, logging.LogRecord)
    assert start.getMessage() == f"start: Work jid={JID} queue=default"
    assert done.getMessage() == f"done: Work jid={JID} queue=default in 12.3 ms"
    assert (done.jid, done.queue, done.job_class) == (JID, "default", "Work")  # type: ignore[attr-defined]
    # The caller's frame, as if it had called logger.info itself.
    assert (start.filename, start.funcName) == (Path(__file__).name, "both_lines")
    text = written(handler, stream)
    assert [line.split(" INFO: ", 1)[1] for line in text] == [
        start.getMessage(), done.getMessage()]


def test_a_second_handler_on_the_root_gets_records_too(
    job_logger: logging.Logger, install: Install,
) -> None:
    handler, stream = install()
    user = RecordingHandler()
    assert job_logger.parent is not None
    job_logger.parent.addHandler(user)
    both_lines(JobLog(job_logger))
    assert [record.levelno for record in user.records] == [logging.INFO, logging.INFO]
    assert len(written(handler, stream)) == 2


@pytest.mark.parametrize("on", ["logger", "handler"])
def test_a_filter_sees_every_record_and_can_drop_one(job_logger: logging.Logger, install: Install,
                                                     on: str) -> None:
    handler, stream = install()
    seen: list[str] = []

    def keep_starts(record: logging.LogRecord) -> bool:
        seen.append(record.getMessage())
        return record.getMessage().startswith("start")

    (job_logger if on == "logger" else handler).addFilter(keep_starts)
    both_lines(JobLog(job_logger))
    assert [message.split(":")[0] for message in seen] == ["start", "done"]
    [line] = written(handler, stream)
    assert "start: Work" in line


def test_a_logger_that_does_not_propagate_uses_its_own_handlers(
    job_logger: logging.Logger, install: Install,
) -> None:
    handler, stream = install()
    user = RecordingHandler()
    job_logger.addHandler(user)
    job_logger.propagate = False
    both_lines(JobLog(job_logger))
    assert len(user.records) == 2
    assert written(handler, stream) == []


def test_buffered_lines_are_written_without_being_flushed(
    job_logger: logging.Logger, install: Install,
) -> None:
    _, stream = install()
    both_lines(JobLog(job_logger))
    wait_until(lambda: stream.getvalue().count("\n") == 2, 10,
               lambda: f"the flusher never wrote the lines: {stream.getvalue()!r}")


def test_any_record_is_written_at_once_after_the_job_lines_before_it(
    job_logger: logging.Logger, install: Install,
) -> None:
    _, stream = install()
    both_lines(JobLog(job_logger))
    job_logger.info("Received quiet signal")
    lines = stream.getvalue().splitlines()  # no flush(): the record wrote the batch
    assert [line.split(" INFO: ")[1].split(":")[0] for line in lines] == [
        "start", "done", "Received quiet signal"]


def test_a_full_batch_is_written_by_the_thread_that_fills_it(
    job_logger: logging.Logger, install: Install,
) -> None:
    _, stream = install()
    log = JobLog(job_logger)
    for _ in range(MAX_BUFFERED):
        log.start("Work", JID, "default", EXTRA)
    assert stream.getvalue().count("\n") == MAX_BUFFERED  # no flush, no waiting


def test_lines_from_many_threads_are_all_written_whole(
    job_logger: logging.Logger, install: Install,
) -> None:
    handler, stream = install()
    log = JobLog(job_logger)

    def work(thread: int) -> None:
        for job in range(500):
            log.start("Work", f"{thread}-{job}", "default", EXTRA)

    threads = [threading.Thread(target=work, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = written(handler, stream)
    jids = sorted(line.split("jid=")[1].split()[0] for line in lines)
    assert jids == sorted(f"{thread}-{job}" for thread in range(8) for job in range(500))


def test_close_writes_what_is_left_and_later_lines_go_straight_out(
    job_logger: logging.Logger, install: Install,
) -> None:
    handler, stream = install()
    log = JobLog(job_logger)
    log.start("Work", JID, "default", EXTRA)
    handler.close()
    assert stream.getvalue().count("\n") == 1
    log.done("Work", JID, "default", 1.0, EXTRA)  # a thread still logging at exit
    assert stream.getvalue().count("\n") == 2


@pytest.fixture
def real_root() -> Iterator[logging.Logger]:
    """The real root logger, given back as it was (configure_logging replaces handlers)."""
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    yield root
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    for handler in saved_handlers:
        root.addHandler(handler)
    root.setLevel(saved_level)


def test_configure_logging_to_a_file_replaces_and_closes_the_previous_handler(
    real_root: logging.Logger, tmp_path: Path,
) -> None:
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    configure_logging("INFO", "json", str(first))
    [old] = real_root.handlers
    log = JobLog(logging.getLogger("cogworker.job"))
    log.start("Work", JID, "default", EXTRA)
    configure_logging("INFO", "text", str(second))
    log.start("Work", "second", "default", EXTRA)
    [new] = real_root.handlers
    new.flush()
    assert isinstance(old, BufferedLineHandler) and old.stream.closed
    assert json.loads(first.read_text(encoding="utf-8"))["jid"] == JID
    assert second.read_text(encoding="utf-8").endswith(
        " INFO: start: Work jid=second queue=default\n")


def test_the_cli_handler_alone_gets_no_log_record(job_logger: logging.Logger,
                                                  install: Install) -> None:
    install()
    made: list[logging.LogRecord] = []
    factory = logging.getLogRecordFactory()

    def counting(*args: object, **kwargs: object) -> logging.LogRecord:
        made.append(factory(*args, **kwargs))
        return made[-1]

    logging.setLogRecordFactory(counting)
    try:
        both_lines(JobLog(job_logger))
        fast = len(made)
        job_logger.addHandler(RecordingHandler())
        both_lines(JobLog(job_logger))
    finally:
        logging.setLogRecordFactory(factory)
    assert (fast, len(made)) == (0, 2)


FORK_SCRIPT = '''
import logging, os, sys, time
from cogworker.worker.job_log import JobLog
from cogworker.worker.log_buffer import BufferedLineHandler

path = sys.argv[1]
handler = BufferedLineHandler(open(path, "a", encoding="utf-8"), owns_stream=True)
root = logging.getLogger()
root.addHandler(handler)
root.setLevel(logging.INFO)
log = JobLog(logging.getLogger("cogworker.job"))
log.start("Work", "parent-before-fork", "default", {})
child = os.fork()
if child == 0:
    log.start("Work", "child", "default", {})
    deadline = time.monotonic() + 20
    while "jid=child " not in open(path, encoding="utf-8").read():
        if time.monotonic() > deadline:
            os._exit(3)
        time.sleep(0.02)
    os._exit(0)  # no exit handler: only the child's own flusher can have written its line
_, status = os.waitpid(child, 0)
sys.exit(os.waitstatus_to_exitcode(status))
'''


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
def test_a_forked_child_writes_its_own_lines_and_not_its_parents(tmp_path: Path) -> None:
    log_path = tmp_path / "fork.log"
    done = subprocess.run([sys.executable, "-c", FORK_SCRIPT, str(log_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = log_path.read_text(encoding="utf-8").splitlines()
    assert sorted(line.split("jid=")[1].split()[0] for line in lines) == [
        "child", "parent-before-fork"]
    pids = {line.split("jid=")[1].split()[0]: line.split(" pid=")[1].split()[0]
            for line in lines}
    assert pids["child"] != pids["parent-before-fork"]  # the child's own pid in its line
