"""One row of the jobs table: a job in one of its five states, with what a person asks of it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from cogworker.api._source import JobRecord
from cogworker.core.backtrace import FIELD as BACKTRACE_FIELD
from cogworker.core.backtrace import backtrace_lines
from cogworker.core.payload import max_retries

Status = Literal["running", "enqueued", "retrying", "scheduled", "dead"]
STATUSES: tuple[Status, ...] = ("running", "enqueued", "retrying", "scheduled", "dead")
"""The order of the "all" view: where a job is in its life, from now to never."""

SORTED_SET_OF: dict[Status, Literal["schedule", "retry", "dead"]] = {
    "scheduled": "schedule", "retrying": "retry", "dead": "dead"}

PREVIEW_CHARS = 160
"""Arguments longer than this are cut in table rows; the detail panel shows them whole."""


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


@dataclass(frozen=True)
class JobRow:
    """A job as the jobs table shows it.

    ``score`` is the sorted-set score (due time for scheduled and retrying jobs, time of
    death for dead ones); ``process``/``thread``/``run_at`` are set for running jobs;
    ``position`` is an enqueued job's index in its queue list (0 = newest) when it was
    read: a hint to find it again quickly (the list moves as jobs come and go).
    """

    status: Status
    record: JobRecord
    queue: str | None
    score: float | None = None
    process: str | None = None
    thread: str | None = None
    run_at: float | None = None
    position: int | None = None

    @property
    def raw(self) -> str:
        return self.record.value

    @property
    def jid(self) -> str:
        return self.record.jid

    @property
    def klass(self) -> str:
        return self.record.klass

    @property
    def args(self) -> list[Any]:
        return self.record.args

    @property
    def parsed(self) -> bool:
        return self.record.item is not None

    @property
    def at(self) -> float | None:
        """When the job entered this state (as far as the payload tells)."""
        if self.status == "running":
            return self.run_at
        if self.status == "dead":
            return self.score
        fields = {"enqueued": ("enqueued_at", "created_at"),
                  "retrying": ("failed_at", "created_at"),
                  "scheduled": ("created_at",)}[self.status]
        for name in fields:
            stamp = _number(self.record.get(name))
            if stamp is not None:
                return stamp
        return None

    @property
    def next_run(self) -> float | None:
        """When it runs next: the due time of a scheduled or retrying job."""
        return self.score if self.status in ("scheduled", "retrying") else None

    @property
    def retry_count(self) -> int:
        value = self.record.get("retry_count", 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    @property
    def attempt(self) -> int:
        """The attempt running (running), next (retrying), or last made (dead)."""
        return self.retry_count if self.status == "dead" else self.retry_count + 1

    @property
    def attempts_allowed(self) -> int:
        """First run plus the retries its ``retry`` option allows."""
        return max_retries(self.record.get("retry")) + 1

    @property
    def error_class(self) -> str | None:
        value = self.record.get("error_class")
        return value if isinstance(value, str) else None

    @property
    def error_message(self) -> str | None:
        value = self.record.get("error_message")
        return value if isinstance(value, str) else None

    @property
    def backtrace(self) -> list[str]:
        """The stored backtrace lines (either stored form), innermost call last."""
        return backtrace_lines(self.record.get(BACKTRACE_FIELD))

    def args_preview(self, limit: int = PREVIEW_CHARS) -> str:
        """The arguments as compact JSON, cut to ``limit`` characters with an ellipsis."""
        shown = json.dumps(self.args, ensure_ascii=False, separators=(", ", ": "))[1:-1]
        return shown if len(shown) <= limit else shown[: limit - 1] + "…"

    def args_pretty(self) -> str:
        """The arguments as indented JSON (the raw text when the entry is not a job)."""
        if not self.parsed:
            return self.raw
        return json.dumps(self.args, ensure_ascii=False, indent=2)

    def payload_pretty(self) -> str:
        """The whole stored payload, indented (the raw text when it is not JSON)."""
        if self.record.item is None:
            return self.raw
        shown = {k: v for k, v in self.record.item.items() if k != BACKTRACE_FIELD}
        return json.dumps(shown, ensure_ascii=False, indent=2, sort_keys=True)

    @property
    def requeueable(self) -> bool:
        return self.record.requeueable
