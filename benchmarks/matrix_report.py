"""The matrix run as one Markdown report: a table per section, then issue 23's targets."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from benchmarks import report
from benchmarks.catalog import BASELINE, JOB_KINDS, LOGGING_MODES, PINNED_COGWORKER, is_peer
from benchmarks.matrix_results import CellKey, Matrix
from benchmarks.report import Metric, SystemRuns, fixed, format_values, rate_text

PROCESSING = (
    Metric("process_steady", "processing, boot excluded (jobs/s)", True, rate_text),
    Metric("worker_cpu_us", "worker CPU (µs/job)", False, fixed(0)),
    Metric("redis_cpu_us", "Redis CPU (µs/job)", False, fixed(1)),
    Metric("commands", "Redis commands/job", False, fixed(2)),
    Metric("log_lines", "log lines/job", False, fixed(2)),
    Metric("peak_rss", "peak RSS (MiB)", False, fixed(1)),
)
JOB_TITLES = {"incr": "Round-trip job (one INCR)", "noop": "No-op job"}
LOGGING_TITLES = {"default": "logging as shipped", "quiet": "quiet logging (WARNING)"}
Rows = Sequence[tuple[CellKey, SystemRuns]]


def render(matrix: Matrix, work_dir: Path) -> str:
    parts = ["\n".join(matrix.environment), _processing(matrix), _costs(matrix),
             _todays_table(matrix), _scaling(matrix), _memory(matrix), _cold_start(matrix),
             _delay(matrix), "### Targets of issue 23 (cogworker-reliable)\n\n"
             + _targets(matrix)]
    if matrix.failed:
        errors = [f"- {key.label}: {error}" for key, entry in matrix.cells.items()
                  for error in entry.errors] + [f"- {error}" for error in matrix.errors]
        parts.append(f"### Failed runs (worker logs kept in {work_dir})\n\n" + "\n".join(errors))
    return "\n\n".join(part for part in parts if part)


def _median(entry: SystemRuns | None, key: str) -> float | None:
    return entry.median(key) if entry is not None else None


def _cell(matrix: Matrix, section: str, system: str, job: str, logging: str,
          workers: int = 1) -> SystemRuns | None:
    return matrix.cells.get(CellKey(section, system, job, logging, workers))


def fastest_peer(rows: Rows, pinned: bool = False) -> SystemRuns | None:
    """The peer (not cogworker) with the highest median steady processing rate, among the
    peers at their defaults or (``pinned``) among those pinned to one CPU."""
    peers = [entry for _, entry in rows if is_peer(entry.system.name, pinned)
             and entry.median("process_steady") is not None]
    return max(peers, key=lambda entry: entry.median("process_steady") or 0.0, default=None)


def _table(rows: Rows) -> str:
    """One row per system; each figure with its ratio to the fastest peer's."""
    peer = fastest_peer(rows)
    header = ["system", "setup", *(metric.title for metric in PROCESSING)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for _, entry in rows:
        name = entry.system.name + (" (fastest peer)" if entry is peer else "")
        cells = [name, f"{entry.system.distribution} {entry.version}, {entry.system.setup}"]
        for metric in PROCESSING:
            values = entry.metrics.get(metric.key)
            if not values:
                cells.append("failed" if entry.errors else "-")
                continue
            base = peer.median(metric.key) if peer is not None and peer is not entry else None
            cells.append(format_values(values, metric.format, base))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _processing(matrix: Matrix) -> str:
    if not matrix.section("processing"):
        return ""
    parts = [f"### Processing: one worker process, {matrix.jobs:,} jobs queued beforehand\n\n"
             "Cells: median [min-max] over the runs, and (xR) = that median / the same figure "
             "of the fastest peer in the table (the peer with the highest processing rate). "
             "Worker CPU: user + system time of the worker processes and their children, "
             "Redis CPU: used_cpu_user + used_cpu_sys, both between the first job counted "
             "and the last, divided by the jobs in between.\n\nLogging as shipped:\n"
             + _logging_notes(matrix)]
    for job in JOB_KINDS:
        for logging in LOGGING_MODES:
            rows = matrix.section("processing", job, logging)
            if rows:
                parts.append(f"#### {JOB_TITLES[job]}, {LOGGING_TITLES[logging]}"
                             f"\n\n{_table(rows)}")
    rows = matrix.section("processing", "incr", "default")
    if rows:
        parts.append("Redis commands per job of the round-trip job with logging as shipped, "
                     "by command (commands run inside Lua scripts count too; `incrby` 1.00 is "
                     "the job's own, as redis-py's `incr()` sends INCRBY):\n\n"
                     + report.render_commands([entry for _, entry in rows]))
    return "\n\n".join(parts)


def _logging_notes(matrix: Matrix) -> str:
    systems = {entry.system.name: entry.system for entry in matrix.cells.values()}
    return "\n".join(f"- {system.name}: {system.logging}" for system in systems.values())


def _difference(first: SystemRuns | None, second: SystemRuns | None, key: str) -> str:
    a, b = _median(first, key), _median(second, key)
    return "-" if a is None or b is None else f"{a - b:+.0f}"


def _costs(matrix: Matrix) -> str:
    systems = list(dict.fromkeys(key.system for key, _ in matrix.section("processing")))
    if not systems:
        return ""
    lines = ["#### What logging and the round trip cost (worker CPU µs per job, differences "
             "of the medians above)", "",
             "| system | logging as shipped minus quiet, round-trip job | logging as shipped minus "
             "quiet, no-op job | round-trip minus no-op job, quiet | log lines/job as shipped |",
             "|---|---|---|---|---|"]
    for name in systems:
        cell = {(job, logging): _cell(matrix, "processing", name, job, logging)
                for job in JOB_KINDS for logging in LOGGING_MODES}
        lines_per_job = _median(cell["incr", "default"], "log_lines")
        lines.append("| " + " | ".join([
            name,
            _difference(cell["incr", "default"], cell["incr", "quiet"], "worker_cpu_us"),
            _difference(cell["noop", "default"], cell["noop", "quiet"], "worker_cpu_us"),
            _difference(cell["incr", "quiet"], cell["noop", "quiet"], "worker_cpu_us"),
            "-" if lines_per_job is None else f"{lines_per_job:.2f}"]) + " |")
    return "\n".join(lines)


def _todays_table(matrix: Matrix) -> str:
    runs = [entry for _, entry in matrix.section("processing", "noop", "quiet")]
    if not runs:
        return ""
    return "\n\n".join([
        "#### Today's table: the no-op job, quiet logging (ratios to cogworker-reliable)",
        report.render_table(runs, BASELINE),
        "Redis commands per processed job, by command:", report.render_commands(runs),
        "Targets of issue 8 (cogworker-reliable):", report.render_targets(runs, BASELINE)])


def _scaling(matrix: Matrix) -> str:
    rows = matrix.section("scaling")
    if not rows:
        return ""
    how = ("one `cogworker run -P 2`" if matrix.supervisor
           else "two `cogworker run` processes (`-P` is not in `cogworker run --help` yet)")
    lines = [f"### Scaling: round-trip job, {matrix.jobs:,} jobs; 2 processes = {how}", "",
             "| system | logging | worker processes | processing, boot excluded (jobs/s) "
             "| vs 1 process | worker CPU (µs/job) | Redis CPU (µs/job) | Redis commands/job "
             "| peak RSS (MiB) |",
             "|---|---|---|---|---|---|---|---|---|"]
    ceilings = []
    for key, entry in rows:
        one = _cell(matrix, "scaling", key.system, key.job, key.logging, 1)
        rate, base = entry.median("process_steady"), _median(one, "process_steady")
        ratio = f"x{rate / base:.2f}" if rate and base and key.workers > 1 else ""
        figures = [_figures(entry, name) for name in ("process_steady", "worker_cpu_us",
                                                      "redis_cpu_us", "commands", "peak_rss")]
        lines.append(f"| {key.system} | {key.logging} | {key.workers} | {figures[0]} | "
                     f"{ratio} | " + " | ".join(figures[1:]) + " |")
        redis_us = entry.median("redis_cpu_us")
        if key.workers > 1 and redis_us and base:
            ceiling = 1e6 / redis_us
            ceilings.append(
                f"- {key.system}, {key.logging} logging: Redis spends {redis_us:.1f} µs of "
                f"CPU per job, so one Redis core serves at most about {ceiling:,.0f} jobs/s "
                f"of this job, {ceiling / base:.1f}x what one worker process does here "
                f"({base:,.0f} jobs/s): the number of worker processes, each on a core of "
                "its own, one Redis can feed.")
    return "\n".join(lines) + ("\n\n" + "\n".join(ceilings) if ceilings else "")


def _figures(entry: SystemRuns, key: str) -> str:
    values = entry.metrics.get(key)
    if not values:
        return "failed" if entry.errors else "-"
    metric = next(m for m in PROCESSING if m.key == key)
    return format_values(values, metric.format)


def _memory(matrix: Matrix) -> str:
    rows = matrix.section("memory")
    if not rows:
        return ""
    _, entry = rows[0]
    points = sorted((int(key.removeprefix("rss_at_")), values[0])
                    for key, values in entry.metrics.items() if key.startswith("rss_at_"))
    if not points:
        return "### Memory\n\nfailed: " + "; ".join(entry.errors)
    lines = [f"### Memory: cogworker-reliable's RSS (worker process), round-trip job, logging "
             f"as shipped, {matrix.memory_jobs:,} jobs", "",
             "| jobs done | " + " | ".join(f"{count:,}" for count, _ in points) + " |",
             "|---|" + "---|" * len(points),
             "| RSS (MiB) | " + " | ".join(f"{rss:.1f}" for _, rss in points) + " |", "",
             f"From {points[0][0]:,} to {points[-1][0]:,} jobs: {_growth(points)}; "
             f"processing {_figures(entry, 'process_steady')} jobs/s."]
    return "\n".join(lines)


def _growth(points: Sequence[tuple[int, float]]) -> str:
    first, last = points[0][1], points[-1][1]
    return f"{last - first:+.1f} MiB ({(last - first) / first:+.1%})"


def _cold_start(matrix: Matrix) -> str:
    if not matrix.cold_start:
        return ""
    lines = [f"### Cold start: the first enqueue in a fresh process (ms; median [min-max] of "
             f"{matrix.cold_starts} processes per library)", "",
             "| library | import + first enqueue | import of the job module | first enqueue "
             "(client made, one job sent) | second enqueue |", "|---|---|---|---|---|"]
    for name, timings in matrix.cold_start.items():
        total = [a + b for a, b in zip(timings["import"], timings["first_enqueue"],
                                       strict=True)]
        cells = [format_values([v * 1000 for v in values], fixed(1))
                 for values in (total, timings["import"], timings["first_enqueue"],
                                timings["second_enqueue"])]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _delay(matrix: Matrix) -> str:
    rows = matrix.section("delay")
    if not rows:
        return ""
    rtt = matrix.delay_round_trip_ms or 0.0
    return "\n\n".join([
        f"### Behind {matrix.delay_ms:g} ms each way (delay proxy; PING round trip "
        f"{rtt:.2f} ms): round-trip job, logging as shipped, {matrix.delay_jobs:,} jobs",
        _table(rows), "Redis commands per job, by command:",
        report.render_commands([entry for _, entry in rows])])


def _targets(matrix: Matrix) -> str:
    lines = [_relative(matrix.section("processing", "incr", "default"),
                       "round-trip job, logging as shipped", 2.0),
             *_pinned_comparison(matrix.section("processing", "incr", "default")),
             *_cpu_targets(matrix), *_scaling_target(matrix),
             _relative(matrix.section("delay"), f"behind {matrix.delay_ms:g} ms each way", 1.5),
             _cold_target(matrix), _memory_target(matrix)]
    return "\n".join(lines)


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def _rates(rows: Rows, system: str,
           pinned: bool) -> tuple[float, float, SystemRuns] | None:
    """``system``'s median rate, the fastest (pinned or unpinned) peer's, and that peer;
    None when either was not measured."""
    base = next((entry for key, entry in rows if key.system == system), None)
    peer = fastest_peer(rows, pinned)
    value, best = _median(base, "process_steady"), _median(peer, "process_steady")
    if value is None or best is None or peer is None:
        return None
    return value, best, peer


def _relative(rows: Rows, label: str, factor: float) -> str:
    rates = _rates(rows, BASELINE, pinned=False)
    if rates is None:
        return f"- {label}: not measured against a peer"
    value, best, peer = rates
    return (f"- {label}: {value:,.0f} jobs/s = {value / best:.2f}x the fastest peer "
            f"({peer.system.name}, {best:,.0f}) (target ≥ {factor:g}x): "
            f"{_verdict(value / best >= factor)}")


def _pinned_comparison(rows: Rows) -> list[str]:
    """Not a target: cogworker pinned to one CPU against the peers pinned the same way."""
    rates = _rates(rows, PINNED_COGWORKER, pinned=True)
    if rates is None:
        return []
    value, best, peer = rates
    return [f"- (each pinned to one CPU, round-trip job, as shipped: cogworker-pinned "
            f"{value:,.0f} jobs/s = {value / best:.2f}x {peer.system.name}, {best:,.0f})"]


def _cpu_targets(matrix: Matrix) -> list[str]:
    shipped = _cell(matrix, "processing", BASELINE, "incr", "default")
    quiet = _cell(matrix, "processing", BASELINE, "incr", "quiet")
    cpu, incr = _median(shipped, "worker_cpu_us"), matrix.incr_cpu_us
    lines = []
    if cpu is None or incr is None:
        lines.append("- worker CPU per job: not measured")
    else:
        lines.append(f"- worker CPU per job (round-trip job, logging as shipped) less the "
                     f"INCR's own {incr:.0f} µs: {cpu - incr:.0f} µs (target ≤ 200 µs): "
                     f"{_verdict(cpu - incr <= 200)}")
    quiet_cpu = _median(quiet, "worker_cpu_us")
    if cpu is None or quiet_cpu is None:
        lines.append("- logging cost: not measured")
    else:
        lines.append(f"- logging cost (round-trip job, as shipped minus quiet): "
                     f"{cpu - quiet_cpu:.0f} µs/job (target ≤ 30 µs): "
                     f"{_verdict(cpu - quiet_cpu <= 30)}")
    commands = _median(shipped, "commands")
    if commands is None:
        lines.append("- Redis commands per job: not measured")
    else:
        lines.append(f"- Redis commands per job (round-trip job, as shipped) without the "
                     f"job's INCR: {commands - 1:.2f} (target ≤ 2.5): "
                     f"{_verdict(commands - 1 <= 2.5)}")
    return lines


def _scaling_target(matrix: Matrix) -> list[str]:
    lines = []
    for system in (BASELINE, PINNED_COGWORKER):
        one = _median(_cell(matrix, "scaling", system, "incr", "default", 1), "process_steady")
        two = _median(_cell(matrix, "scaling", system, "incr", "default", 2), "process_steady")
        if one is None or two is None:
            continue
        text = f"{two:,.0f} / {one:,.0f} jobs/s = {two / one:.2f}x"
        lines.append(f"- 2 processes vs 1 (round-trip job, as shipped): {text} (target ≥ "
                     f"1.7x): {_verdict(two / one >= 1.7)}" if system == BASELINE else
                     f"- (cogworker-pinned, -P 2 against one pinned process: {text})")
    return lines or ["- 2 processes vs 1: not measured"]


def _cold_target(matrix: Matrix) -> str:
    timings = matrix.cold_start.get("cogworker")
    if not timings:
        return "- first enqueue: not measured"
    first = statistics.median(timings["first_enqueue"]) * 1000
    total = statistics.median(a + b for a, b in zip(timings["import"],
                                                     timings["first_enqueue"], strict=True))
    return (f"- first enqueue in a fresh process: {first:.1f} ms ({total * 1000:.1f} ms with "
            f"the import) (target ≤ 10 ms): {_verdict(first <= 10)}")


def _memory_target(matrix: Matrix) -> str:
    rows = matrix.section("memory")
    points = sorted((int(key.removeprefix("rss_at_")), values[0])
                    for _, entry in rows for key, values in entry.metrics.items()
                    if key.startswith("rss_at_"))
    if not points:
        return "- RSS flat under load: not measured"
    growth = (points[-1][1] - points[0][1]) / points[0][1]
    return (f"- RSS flat under load: {points[0][1]:.1f} MiB at {points[0][0]:,} jobs, "
            f"{points[-1][1]:.1f} at {points[-1][0]:,} ({growth:+.1%}; read as flat within "
            f"5%): {_verdict(abs(growth) <= 0.05)}")
