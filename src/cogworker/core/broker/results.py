"""``broker.extension(RESULTS)``: the results of jobs in a workflow, and each workflow's state.

Only jobs that are steps of a workflow (:mod:`cogworker.workflows`) have a result stored;
any other job's return value is dropped, as before. A result is the step's return value
as JSON text, kept ``ttl`` seconds. A workflow's record says whether it is ``running``,
``succeeded`` (its last step finished: that step's result is the workflow's) or
``failed`` (at which step, why).

The one step that must never be lost or doubled is :meth:`ResultStore.finish_step`: it
stores a step's result and pushes the next step **in one atomic step**, and the stored
result is the step's flag: a step finished once (then run again after a crash before its
ack) finds its result already there and pushes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from cogworker.core.broker.composite import Extension

WorkflowState = Literal["running", "succeeded", "failed"]
WORKFLOW_STATES: tuple[str, ...] = get_args(WorkflowState)

DEFAULT_RESULT_TTL = 86_400.0
"""Seconds a workflow's results and record live by default (one day)."""
READ_LIMIT = 1000
"""At most this many results per :meth:`ResultStore.results` (``ValueError`` beyond)."""


@dataclass(frozen=True, slots=True)
class NextStep:
    """The job to push when a step finishes: its queue and its exact raw payload."""

    queue: str
    raw: str


@dataclass(frozen=True, slots=True)
class FinishedStep:
    """One finished step of workflow ``workflow_id``.

    ``step`` counts from 0; ``result`` is the step's return value as JSON text; ``next``
    the step to push now (None: nothing to push, the last step of a chain or a member of
    a group); ``last``: this step's result is the workflow's result (its state becomes
    ``succeeded``); ``completes_group``: a member of a plain group, whose workflow
    succeeds once every one of its ``steps`` has finished. ``ttl``: seconds the result
    and the workflow's record live from now.
    """

    workflow_id: str
    step: int
    jid: str
    result: str
    ttl: float
    next: NextStep | None = None
    last: bool = False
    completes_group: bool = False


FinishOutcome = Literal["finished", "already", "stopped"]
"""What :meth:`ResultStore.finish_step` did: ``finished`` (result stored, next step
pushed), ``already`` (this step had finished before: nothing written, nothing pushed),
``stopped`` (result stored, the workflow had failed: nothing pushed)."""


@dataclass(frozen=True, slots=True)
class WorkflowRecord:
    """One workflow as stored. ``steps``: how many steps it has; ``finished``: how many
    have finished; ``failed_step``/``error``: where and why it failed; ``result_jid``:
    the jid whose result is the workflow's (set when it succeeded)."""

    workflow_id: str
    state: WorkflowState
    steps: int
    finished: int = 0
    failed_step: int | None = None
    error: str | None = None
    result_jid: str | None = None


class ResultStore(Protocol):
    """Workflow results and states. Thread-safe; raises the broker's errors
    (``BrokerUnavailableError``, ``BrokerError``). Every method is one round trip."""

    def start(self, workflow_id: str, steps: int, ttl: float) -> None:
        """Record workflow ``workflow_id`` as ``running`` with ``steps`` steps, living
        ``ttl`` seconds (renewed by every finished step). Call before its first push."""
        ...

    def finish_step(self, finished: FinishedStep) -> FinishOutcome:
        """Atomically: unless the step's result is stored already (then ``already``,
        nothing changes), store it for ``finished.ttl`` seconds, count the step, and,
        unless the workflow failed (``stopped``), push ``finished.next`` on its queue (as
        a push does: the queue registered, idle workers woken) and, for the ``last`` step
        (or the last of a group's members to finish, with ``completes_group``), mark the
        workflow ``succeeded``. Exactly one call per step returns ``finished``."""
        ...

    def fail(self, workflow_id: str, step: int, error: str, ttl: float) -> bool:
        """Mark the workflow ``failed`` at ``step`` with ``error`` unless it succeeded or
        failed already; True when this call marked it. Atomic."""
        ...

    def workflow(self, workflow_id: str) -> WorkflowRecord | None:
        """The workflow's record, or None when unknown or expired."""
        ...

    def results(self, jids: Sequence[str]) -> list[str | None]:
        """The stored result (JSON text) of each jid, in order; None where there is none
        (not a workflow step, not finished, or expired). At most :data:`READ_LIMIT`."""
        ...


RESULTS: Extension[ResultStore] = Extension("results", "results of workflow steps and "
                                            "workflow states")
