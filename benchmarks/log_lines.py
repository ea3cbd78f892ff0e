"""``python -m benchmarks.log_lines``: what a job's ``start`` and ``done`` lines cost the CPU.

The matrix reads the logging cost as the difference of two whole-worker figures, which on a
shared machine is noisier than the 30 µs it is held to. This measures the two lines alone,
in this one process, written to a file as a worker's are:

* ``logging.StreamHandler`` with the text format as it was before the fast path (a
  ``LogRecord`` per line, a write and a flush per line): what the worker paid before;
* the CLI's ``BufferedLineHandler`` alone, so the lines take the fast path (as shipped);
* the same with a handler of the user's on the job logger, so they take ``logger.info``;
* the job logger at WARNING (no line).

Each way runs ``--n`` jobs (one ``start`` and one ``done`` each) per loop, shared by
``--threads`` threads (10, a worker's default concurrency: threads that take turns at the
GIL and the handler's lock, as processor threads do); the figure is the median over
``--runs`` loops, the ways alternating, of the CPU time of this process (every thread: the
flusher's too) per job, a final flush included.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from cogworker.worker.job_log import JobLog
from cogworker.worker.log_buffer import BufferedLineHandler
from cogworker.worker.log_format import JsonFormatter, TextFormatter

JID = "0123456789abcdef01234567"
EXTRA = {"jid": JID, "queue": "default", "job_class": "Work"}
Jobs = Callable[[int], None]


class RecordTextFormatter(logging.Formatter):
    """The text format as the CLI built it from a record before the fast path (unchanged
    text; no cached stamp)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return (f"{stamp}.{int(record.msecs):03d}Z pid={record.process} "
                f"{record.levelname}: {record.getMessage()}")


def _through_logging(logger: logging.Logger) -> Jobs:
    def jobs(count: int) -> None:
        for _ in range(count):
            logger.info("start: %s jid=%s queue=%s", "Work", JID, "default", extra=EXTRA)
            logger.info("done: %s jid=%s queue=%s in %.1f ms", "Work", JID, "default", 1.25,
                        extra=EXTRA)

    return jobs


def _through_job_log(logger: logging.Logger) -> Jobs:
    job_log = JobLog(logger)

    def jobs(count: int) -> None:
        for _ in range(count):
            job_log.start("Work", JID, "default", EXTRA)
            job_log.done("Work", JID, "default", 1.25, EXTRA)

    return jobs


@contextmanager
def _set_up(path: Path, way: str, fmt: str) -> Iterator[Jobs]:
    """The jobs' lines for ``way``: a ``cogworker.job`` logger under a root of its own,
    its handler writing to ``path``; each call ends with a flush."""
    root = logging.Logger("root", logging.INFO)
    logger = logging.Logger("cogworker.job")
    logger.parent = root
    stream = path.open("a", encoding="utf-8")
    handler: logging.Handler
    if way == "before":
        handler = logging.StreamHandler(stream)
        handler.setFormatter(JsonFormatter() if fmt == "json" else RecordTextFormatter())
        jobs = _through_logging(logger)
    else:
        handler = BufferedLineHandler(stream, JsonFormatter() if fmt == "json"
                                      else TextFormatter())
        jobs = _through_job_log(logger)
    root.addHandler(handler)
    if way == "user handler":
        logger.addHandler(logging.NullHandler())
    if way == "WARNING":
        logger.setLevel(logging.WARNING)

    def jobs_then_flush(count: int) -> None:
        jobs(count)
        handler.flush()

    try:
        yield jobs_then_flush
    finally:
        handler.close()
        stream.close()


WAYS = {
    "before": "logging.StreamHandler, a record per line (before)",
    "fast": "BufferedLineHandler alone: the fast path (as shipped)",
    "user handler": "BufferedLineHandler + a user's handler: logger.info",
    "WARNING": "the job logger at WARNING: no line",
}


def _cpu_per_job(jobs: Jobs, count: int, threads: int) -> float:
    """CPU per job with ``count`` jobs shared by ``threads`` threads, as processor threads."""
    share = [count // threads + (index < count % threads) for index in range(threads)]
    workers = [threading.Thread(target=jobs, args=(jobs_of_thread,))
               for jobs_of_thread in share]
    started = time.process_time()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return (time.process_time() - started) / count * 1e6


def measure(count: int, runs: int, threads: int, work: Path) -> list[tuple[str, str, float]]:
    """(format, way, median CPU µs per job) for every way of both formats."""
    rows = []
    for fmt in ("text", "json"):
        ways = [way for way in WAYS if fmt == "text" or way != "WARNING"]
        samples: dict[str, list[float]] = {way: [] for way in ways}
        for _ in range(runs):
            for way in ways:
                path = work / f"{fmt}-{way.replace(' ', '-')}.log"
                with _set_up(path, way, fmt) as jobs:
                    samples[way].append(_cpu_per_job(jobs, count, threads))
        rows += [(fmt, way, statistics.median(samples[way])) for way in ways]
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.log_lines")
    parser.add_argument("--n", type=int, default=20_000, help="jobs per loop")
    parser.add_argument("--runs", type=int, default=5, help="loops per way (median shown)")
    parser.add_argument("--threads", type=int, default=10,
                        help="threads logging at once (default 10, a worker's concurrency)")
    options = parser.parse_args(argv)
    if min(options.n, options.runs, options.threads) < 1:
        parser.error("--n, --runs and --threads must be at least 1")
    with tempfile.TemporaryDirectory() as work:
        rows = measure(options.n, options.runs, options.threads, Path(work))
    print(f"N = {options.n:,} jobs (a start and a done line each) per loop on "
          f"{options.threads} thread(s), median of {options.runs} loops; "
          f"Python {sys.version.split()[0]}; to a file\n")
    print("| format | way | CPU µs per job (both lines) |")
    print("|---|---|---|")
    for fmt, way, cpu in rows:
        print(f"| {fmt} | {WAYS[way]} | {cpu:.1f} |")


if __name__ == "__main__":
    main()
