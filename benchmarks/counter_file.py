"""The harness side of the counter file: how many records there are, and what they say."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmarks.counter import RECORD


@dataclass(frozen=True)
class Record:
    argument: float
    ran_at: float


class CounterFile:
    """The file the jobs of one run append to (:func:`benchmarks.counter.record`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def reset(self) -> None:
        self.path.write_bytes(b"")

    def count(self) -> int:
        try:
            return self.path.stat().st_size // RECORD.size
        except FileNotFoundError:
            return 0

    def records(self) -> list[Record]:
        data = self.path.read_bytes()
        usable = len(data) - len(data) % RECORD.size
        return [Record(a, t) for a, t in RECORD.iter_unpack(data[:usable])]
