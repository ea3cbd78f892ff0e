"""What a leg of ``scripts/legs.py`` did: its command run and counted, and the closing table.

The counts are read off the last line of the leg's output (pytest's ``N passed, M skipped
...``, which ``scripts/compat_smoke.py`` and ``scripts/package_check.py`` imitate). The
table has a row per leg, then the legs' times added up and the wall time of the matrix
(less than that sum, because lanes run side by side), then the ``matrix:`` line CI reads.
Standard library only.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from leg_env import ROOT
from leg_lanes import LegLog

if TYPE_CHECKING:
    from legs import Leg

NO_TESTS_COLLECTED = 5  # pytest's exit status when nothing was collected (or selected)
_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


@dataclass
class Outcome:
    leg: Leg
    log: LegLog
    status: str = "skipped"  # passed, failed, skipped
    note: str = ""
    python: str = "-"
    redis_py: str = "-"
    hiredis: str = "-"
    server: str = "-"
    counts: str = "-"
    seconds: float = 0.0
    tally: dict[str, int] = field(default_factory=dict)  # "passed": 334, ...

    def conclude(self, status: str, note: str) -> Outcome:
        """End the leg as ``status`` for the reason ``note`` (shown in its output too)."""
        self.status, self.note = status, note
        self.log.line(f"    {note}")
        return self


def run_counted(outcome: Outcome, command: list[str], env: dict[str, str]) -> None:
    """Run ``command``, its output to the leg's log; read the counts off its last line."""
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    last = ""
    for line in process.stdout:
        outcome.log.write(line)
        if line.strip():
            last = line.strip()
    status = process.wait()
    outcome.seconds = time.monotonic() - started
    counts = _COUNTS.findall(last)
    outcome.counts = ", ".join(f"{number} {word}" for number, word in counts) or "-"
    outcome.tally = {word.rstrip("s") if word.startswith("error") else word: int(number)
                     for number, word in counts}
    if status == 0:
        outcome.status = "passed"
    elif status == NO_TESTS_COLLECTED:
        outcome.status, outcome.note = "failed", "pytest collected no tests"
    else:
        outcome.status, outcome.note = "failed", f"exit status {status}"


def run_shards(outcome: Outcome, commands: list[list[str]], env: dict[str, str]) -> None:
    """Run the ``commands`` (one pytest per shard of the leg's tests) at the same time; the
    leg's log gets each shard's whole output in turn, and the shards' counts added up."""
    shards = [Outcome(outcome.leg, LegLog(f"{outcome.leg.name}[{index}]", stream=False))
              for index in range(1, len(commands) + 1)]
    threads = [threading.Thread(target=run_counted, args=(shard, command, env))
               for shard, command in zip(shards, commands, strict=True)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcome.seconds = time.monotonic() - started
    for shard, command in zip(shards, commands, strict=True):
        outcome.log.line(f"==> shard {shard.log.name} ({minutes(shard.seconds)}, "
                         f"{shard.counts}): {' '.join(command[1:])}")
        outcome.log.write(shard.log.held())
        for word, number in shard.tally.items():
            outcome.tally[word] = outcome.tally.get(word, 0) + number
    outcome.counts = ", ".join(f"{number} {word}"
                               for word, number in outcome.tally.items()) or "-"
    failed = [shard for shard in shards if shard.status != "passed"]
    if failed:
        outcome.status = "failed"
        outcome.note = "; ".join(f"{shard.log.name}: {shard.note}" for shard in failed)
    else:
        outcome.status = "passed"


def print_summary(outcomes: list[Outcome], wall_seconds: float) -> None:
    print("==> matrix summary", flush=True)
    header = ("leg", "result", "python", "redis-py", "hiredis", "redis-server", "tests", "time")
    rows = [header] + [
        (o.leg.name, o.status, o.python, o.redis_py, o.hiredis, o.server, o.counts,
         minutes(o.seconds) if o.seconds else "-")
        for o in outcomes]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    for outcome in outcomes:
        if outcome.note:
            print(f"  {outcome.leg.name}: {outcome.note}")
    print(f"  all legs: {minutes(sum(o.seconds for o in outcomes))} added up, "
          f"{minutes(wall_seconds)} wall time (lanes side by side, venvs built included)")
    # The closing line CI reads: every leg's tests (and smoke cells) added up.
    passed, skipped = (sum(o.tally.get(word, 0) for o in outcomes)
                       for word in ("passed", "skipped"))
    failed = sum(o.tally.get("failed", 0) + o.tally.get("error", 0) for o in outcomes)
    # A leg that failed without a failing test (a missing prerequisite in CI) counts as one.
    failed += sum(o.status == "failed" and not (o.tally.get("failed") or o.tally.get("error"))
                  for o in outcomes)
    print(f"matrix: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped
                                                         else ""), flush=True)


def minutes(seconds: float) -> str:
    return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
