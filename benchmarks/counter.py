"""The job-side counter: every benchmark job appends one fixed-size record to a file.

A record is two little-endian doubles: the job's argument (an index, or the enqueue time
for latency probes) and ``time.time()`` when the job ran. Appends with ``O_APPEND`` are
atomic between threads and processes on a local file system, cost one system call, send
nothing to Redis and are identical for every system, so counting does not favour anyone.
The harness reads the file with :class:`benchmarks.counter_file.CounterFile`.

Job modules import this one, so it imports only what every queue library imports anyway.
"""

from __future__ import annotations

import os
import struct
import threading
import time

COUNTER_ENV = "BENCH_COUNTER_FILE"
RECORD = struct.Struct("<dd")

_lock = threading.Lock()
_fd: int | None = None


def _descriptor() -> int:
    global _fd
    if _fd is None:
        with _lock:
            if _fd is None:
                path = os.environ.get(COUNTER_ENV)
                if not path:
                    raise RuntimeError(
                        f"{COUNTER_ENV} is not set: benchmark jobs must run under the "
                        "benchmark harness (python -m benchmarks)"
                    )
                _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    return _fd


def record(argument: float) -> None:
    """Called by every benchmark job: append ``(argument, now)``."""
    os.write(_descriptor(), RECORD.pack(float(argument), time.time()))
