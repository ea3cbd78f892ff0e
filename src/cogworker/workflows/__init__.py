"""Workflows: ``chain``, ``group`` and ``chord`` of job signatures (``job.s(...)``).

See ``docs/how-to/batches-workflows.md`` ("Workflows") for the exact semantics: what is
passed from step to step, what is stored and for how long, and what a crash does.
"""

from __future__ import annotations

from cogworker.core.signatures import Signature
from cogworker.workflows.chain import Chain, chain
from cogworker.workflows.errors import WorkflowError, WorkflowFailedError, WorkflowTimeoutError
from cogworker.workflows.groups import Chord, Group, GroupResult, chord, group
from cogworker.workflows.results import JobResult, WorkflowResult

__all__ = [
    "Chain",
    "Chord",
    "Group",
    "GroupResult",
    "JobResult",
    "Signature",
    "WorkflowError",
    "WorkflowFailedError",
    "WorkflowResult",
    "WorkflowTimeoutError",
    "chain",
    "chord",
    "group",
]
