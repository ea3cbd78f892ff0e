"""Turn the runs into one Markdown table (median [min-max] and ratio) and a targets check."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from benchmarks.catalog import System, is_peer


@dataclass(frozen=True)
class Metric:
    key: str
    title: str
    higher_is_better: bool
    format: Callable[[float], str]


def rate_text(value: float) -> str:
    return f"{value / 1000:.1f}k" if value >= 10_000 else f"{value:,.0f}"


def fixed(digits: int) -> Callable[[float], str]:
    return lambda value: f"{value:.{digits}f}"


METRICS: tuple[Metric, ...] = (
    Metric("enqueue_each", "enqueue (jobs/s)", True, rate_text),
    Metric("enqueue_bulk", "bulk enqueue (jobs/s)", True, rate_text),
    Metric("process_total", "processing (jobs/s)", True, rate_text),
    Metric("process_steady", "processing, boot excluded (jobs/s)", True, rate_text),
    Metric("pickup_p50", "pickup p50 (ms)", False, fixed(1)),
    Metric("pickup_p99", "pickup p99 (ms)", False, fixed(1)),
    Metric("peak_rss", "worker peak RSS (MB)", False, fixed(1)),
    Metric("commands", "Redis commands/job", False, fixed(2)),
)


@dataclass
class SystemRuns:
    system: System
    version: str
    metrics: dict[str, list[float]] = field(default_factory=dict)
    commands: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def add(self, metrics: dict[str, float], commands: dict[str, float]) -> None:
        for key, value in metrics.items():
            self.metrics.setdefault(key, []).append(value)
        for key, value in commands.items():
            self.commands.setdefault(key, []).append(value)

    def median(self, key: str) -> float | None:
        values = self.metrics.get(key)
        return statistics.median(values) if values else None


def render_table(runs: Sequence[SystemRuns], baseline: str) -> str:
    """The Markdown table: one row per system, one column per metric."""
    base = next((r for r in runs if r.system.name == baseline), None)
    header = ["system", "setup", *(m.title for m in METRICS)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for entry in runs:
        cells = [entry.system.name, f"{entry.system.distribution} {entry.version}, "
                 f"{entry.system.setup}"]
        for metric in METRICS:
            cells.append(_cell(entry, base, metric))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(entry: SystemRuns, base: SystemRuns | None, metric: Metric) -> str:
    values = entry.metrics.get(metric.key)
    if not values:
        if metric.key == "enqueue_bulk" and not entry.system.bulk:
            return "n/a"
        return "failed" if entry.errors else "-"
    base_median = base.median(metric.key) if base is not None and base is not entry else None
    return format_values(values, metric.format, base_median)


def format_values(values: Sequence[float], show: Callable[[float], str],
                  base: float | None = None) -> str:
    """``median [min-max]`` (one value: just it), then ``(xR)`` = median / ``base``."""
    median = statistics.median(values)
    text = show(median)
    if len(values) > 1:
        text += f" [{show(min(values))}-{show(max(values))}]"
    if base:
        text += f" (x{ratio_text(median / base)})"
    return text


def ratio_text(value: float) -> str:
    if math.isnan(value):
        return "?"
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def render_commands(runs: Sequence[SystemRuns]) -> str:
    """Per system, the Redis commands per processed job by name (medians over runs)."""
    lines = []
    for entry in runs:
        if not entry.commands:
            continue
        per_command = {name: statistics.median(v) for name, v in entry.commands.items()}
        shown = sorted(per_command.items(), key=lambda item: -item[1])
        text = ", ".join(f"{name} {value:.2f}" for name, value in shown if value >= 0.005)
        proxy = entry.median("proxy_cpu")
        if proxy is not None:
            text += f" (the delay proxy used {proxy:.0%} of a core while these jobs ran)"
        lines.append(f"- {entry.system.name}: {text}")
    return "\n".join(lines)


def render_errors(runs: Sequence[SystemRuns]) -> str:
    lines = []
    for entry in runs:
        for error in entry.errors:
            first, _, rest = error.partition("\n")
            lines.append(f"- {entry.system.name}: {first}")
            lines.extend(f"      {line}" for line in rest.splitlines())
    return "\n".join(lines)


def render_targets(runs: Sequence[SystemRuns], baseline: str) -> str:
    """The issue's targets for ``baseline``, each marked met or NOT met (medians)."""
    base = next((r for r in runs if r.system.name == baseline), None)
    if base is None:
        return f"(no targets: {baseline} was not measured)"
    peers = [r for r in runs if is_peer(r.system.name)]
    lines = []
    for key, label, factor in (("process_total", "processing", 3.0),
                               ("enqueue_each", "single enqueue", 1.2)):
        lines.append(_relative_target(base, peers, key, label, factor))
    for key, label, limit, at_least, unit in (
        ("enqueue_bulk", "bulk enqueue", 30_000, True, " jobs/s"),
        ("pickup_p50", "pickup p50", 5, False, " ms"),
        ("pickup_p99", "pickup p99", 20, False, " ms"),
        ("commands", "Redis commands per job", 3, False, ""),
        ("peak_rss", "worker peak RSS", 60, False, " MB"),
    ):
        value = base.median(key)
        if value is None:
            lines.append(f"- {label}: not measured")
            continue
        met = value >= limit if at_least else value <= limit
        sign = "≥" if at_least else "≤"
        shown = f"{value:,.0f}" if unit == " jobs/s" else f"{value:,.2f}"
        lines.append(f"- {label}: {shown}{unit} (target {sign} {limit:,}{unit}): "
                     f"{'met' if met else 'NOT met'}")
    return "\n".join(lines)


def _relative_target(base: SystemRuns, peers: Sequence[SystemRuns], key: str, label: str,
                     factor: float) -> str:
    value = base.median(key)
    measured = [(p.median(key), p.system.name) for p in peers]
    best = max(((v, name) for v, name in measured if v is not None), default=None)
    if value is None or best is None:
        return f"- {label}: not measured against a peer"
    ratio = value / best[0]
    met = "met" if ratio >= factor else "NOT met"
    return (f"- {label}: {value:,.0f} jobs/s = {ratio:.2f}x the fastest peer "
            f"({best[1]}, {best[0]:,.0f} jobs/s) (target ≥ {factor:g}x): {met}")
