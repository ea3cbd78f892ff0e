"""The memory probe's job module: the benchmark app's round-trip job and a ``probe`` job.

``probe(jobs)`` runs inside the worker and appends one JSON line to ``$BENCH_PROBE_FILE``:
what the process holds after ``gc.collect()``, from four places, so that a rise in its
resident memory can be told apart (see ``benchmarks/memory_probe.py``):

* ``rss_mib``: resident memory (``/proc/self/statm``);
* ``gc_objects``: objects the garbage collector tracks (containers: a leak of them grows this);
* ``py_blocks``: ``sys.getallocatedblocks()``, every block of the interpreter's allocator;
* ``malloc_mib``: what glibc's ``malloc`` has handed out and not had back (``mallinfo2``,
  every arena and the ``mmap`` chunks), None under another C library;
* ``traced_mib``: with the worker under ``PYTHONTRACEMALLOC``, the memory tracemalloc
  traces; its snapshot is written beside the probe file as ``snapshot-<jobs>.bin``.

``python -m benchmarks.systems.memory_probe_app push 100000,200000`` queues round-trip jobs
in bulk with a probe after each count (the counts are cumulative).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tracemalloc
from pathlib import Path

from benchmarks.systems.cogworker_app import app, incr

PROBE_FILE_ENV = "BENCH_PROBE_FILE"
BULK = 5000  # jobs a push_bulk call sends


def _rss_mib() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _malloc_mib() -> float | None:
    """glibc's bytes in use (``uordblks + hblkhd`` of ``mallinfo2``), None elsewhere."""
    import ctypes  # the first probe loads it; the later ones are compared with the first

    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):  # not glibc, or a glibc older than 2.33
        return None
    fields = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]
    info_type = type("MallInfo2", (ctypes.Structure,), {"_fields_": fields})
    libc.mallinfo2.restype = info_type
    info = libc.mallinfo2()
    return float(info.uordblks + info.hblkhd) / 2**20


@app.job(name="memory_probe")  # the same name pushed from ``__main__`` and run by the worker
def probe(jobs: int) -> None:
    gc.collect()
    target = Path(os.environ[PROBE_FILE_ENV])
    line = {"jobs": jobs, "rss_mib": _rss_mib(), "gc_objects": len(gc.get_objects()),
            "py_blocks": sys.getallocatedblocks(), "malloc_mib": _malloc_mib(),
            "traced_mib": None}
    if tracemalloc.is_tracing():
        line["traced_mib"] = tracemalloc.get_traced_memory()[0] / 2**20
        tracemalloc.take_snapshot().dump(str(target.parent / f"snapshot-{jobs}.bin"))
    with target.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def push(counts: list[int]) -> None:
    """Queue round-trip jobs up to each cumulative count, with a probe after each."""
    done = 0
    for count in counts:
        while done < count:
            size = min(BULK, count - done)
            app.push_bulk(incr, [[float(done + index)] for index in range(size)])
            done += size
        probe.perform_async(count)
    app.close()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "push":
        sys.exit("usage: python -m benchmarks.systems.memory_probe_app push COUNT[,COUNT...]")
    push([int(count) for count in sys.argv[2].split(",")])
