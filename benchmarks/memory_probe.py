"""``benchmarks/run memory-probe``: where a worker's resident memory goes over a long run.

The matrix's memory section says *that* the RSS rises; this says *what* rises. It queues N
round-trip jobs with a probe job after every N/K of them
(:mod:`benchmarks.systems.memory_probe_app`), runs ``cogworker run --burst`` (reliable
fetch, 10 threads, logging as shipped, to a file) over them, and prints what each probe
saw inside the worker: resident memory, objects the garbage collector tracks, blocks of
Python's allocator, glibc's bytes in use and, with ``--tracemalloc``, the memory
tracemalloc traces and the source lines whose allocations grew most from the first probe
to the last. A leak of Python objects grows the second or third column with the jobs; a
rise in the RSS alone is the allocators' (fragmentation, high-water marks)::

    benchmarks/run memory-probe --n 1000000                  # RSS and the allocators
    benchmarks/run memory-probe --n 300000 --tracemalloc     # and which lines hold more

Under ``--tracemalloc`` (one frame of traceback a block; ``--frames`` for more) the worker
runs several times slower; its figures are compared with each other, not with a run
without it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

from benchmarks.context import machine_line
from benchmarks.environment import BenchEnvironment, child_environment, repository_root
from benchmarks.hot_path import run_worker
from benchmarks.systems.memory_probe_app import PROBE_FILE_ENV

APP = "benchmarks.systems.memory_probe_app:app"
COLUMNS = (("rss_mib", "RSS (MiB)", "{:.1f}"), ("gc_objects", "GC-tracked objects", "{:,}"),
           ("py_blocks", "Python allocator blocks", "{:,}"),
           ("malloc_mib", "glibc malloc in use (MiB)", "{:.2f}"),
           ("traced_mib", "tracemalloc traced (MiB)", "{:.2f}"))
TOP_LINES = 8


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmarks/run memory-probe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="jobs (1,000,000)")
    parser.add_argument("--checkpoints", type=int, default=10,
                        help="probes, one every N/K jobs (10)")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="run the worker under tracemalloc and show which lines grew")
    parser.add_argument("--frames", type=int, default=1,
                        help="tracemalloc frames kept a block (1)")
    parser.add_argument("--keep", metavar="DIR", help="keep the log, probes and snapshots")
    options = parser.parse_args(argv)
    if options.checkpoints < 2 or options.n < options.checkpoints:
        parser.error("--checkpoints must be at least 2 and --n at least --checkpoints")
    if options.frames < 1:
        parser.error("--frames must be at least 1")
    return options


def run_probe(options: argparse.Namespace, work: Path) -> list[dict[str, float | None]]:
    """Queue the jobs and probes, run the worker over them; the probes' lines, in order."""
    step = options.n // options.checkpoints
    counts = [step * k for k in range(1, options.checkpoints)] + [options.n]
    probes = work / "probes.jsonl"
    with BenchEnvironment(work, delay_ms=0) as bench:
        env = child_environment(bench.url, work / "counter")
        env[PROBE_FILE_ENV] = str(probes)
        subprocess.run([sys.executable, "-m", "benchmarks.systems.memory_probe_app", "push",
                        ",".join(map(str, counts))], env=env, check=True,
                       cwd=repository_root())
        if options.tracemalloc:
            env["PYTHONTRACEMALLOC"] = str(options.frames)
        run_worker([sys.executable, "-m", "cogworker", "run", "-A", APP, "-c", "10",
                    "--burst", "-L", str(work / "worker.log")], env, work / "worker.out")
    lines = [json.loads(line) for line in probes.read_text(encoding="utf-8").splitlines()]
    return sorted(lines, key=lambda line: float(line["jobs"] or 0))


def table(probes: list[dict[str, float | None]]) -> list[str]:
    """The probes as a Markdown table, one row per probe, and the change first to last."""
    shown = [column for column in COLUMNS if probes[0][column[0]] is not None]
    rows = ["| jobs queued before the probe | " + " | ".join(c[1] for c in shown) + " |",
            "|---" * (len(shown) + 1) + "|"]
    for probe in probes:
        cells = [fmt.format(probe[key]) for key, _title, fmt in shown]
        rows.append(f"| {int(probe['jobs'] or 0):,} | " + " | ".join(cells) + " |")
    first, last = probes[0], probes[-1]
    change = [f"{title} {_change(first[key], last[key], fmt)}" for key, title, fmt in shown]
    rows += ["", f"From the first probe to the last: {'; '.join(change)}."]
    return rows


def _change(before: float | None, after: float | None, fmt: str) -> str:
    if not before or after is None:
        return "n/a"
    signed = fmt.replace("{:", "{:+")
    return f"{signed.format(after - before)} ({(after - before) / before:+.1%})"


def grown_lines(work: Path, probes: list[dict[str, float | None]]) -> list[str]:
    """The source lines whose traced memory grew most from the first probe to the last."""
    first, last = (tracemalloc.Snapshot.load(str(work / f"snapshot-{int(p['jobs'] or 0)}.bin"))
                   for p in (probes[0], probes[-1]))
    grown = [stat for stat in last.compare_to(first, "lineno") if stat.size_diff > 0]
    out = [f"Source lines whose traced memory grew most, from the first probe to the last "
           f"(top {TOP_LINES}):", ""]
    out += [f"- {stat.traceback[0].filename}:{stat.traceback[0].lineno}: "
            f"{stat.size_diff / 1024:+,.1f} KiB in {stat.count_diff:+,} block(s), now "
            f"{stat.size / 1024:,.1f} KiB" for stat in grown[:TOP_LINES]]
    return out if grown else ["No source line's traced memory grew."]


def main(argv: Sequence[str] | None = None) -> None:
    options = _parse(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="cogworker-memory-probe-") as folder:
        work = Path(options.keep or folder)
        work.mkdir(parents=True, exist_ok=True)
        machine = machine_line()  # the load average before the run, not after it
        probes = run_probe(options, work)
        print(machine)
        print(f"memory probe: cogworker-reliable, round-trip job, logging as shipped, "
              f"n={options.n:,}, {options.checkpoints} probes"
              f"{f', tracemalloc ({options.frames} frame(s))' if options.tracemalloc else ''}")
        print()
        print("\n".join(table(probes)))
        if options.tracemalloc:
            print()
            print("Under tracemalloc the RSS holds what every earlier probe's snapshot took "
                  "(freed, not returned): read the other columns.")
            print()
            print("\n".join(grown_lines(work, probes)))


if __name__ == "__main__":
    main()
