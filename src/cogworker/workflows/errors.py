"""The errors of workflows (under :class:`~cogworker.core.errors.CogworkerError`).

::

    CogworkerError
    └── WorkflowError                 a workflow cannot be started or read
        ├── WorkflowFailedError       it failed: at which step, why (``get``)
        └── WorkflowTimeoutError      no result within the time given (``get``)
"""

from __future__ import annotations

from cogworker.core.errors import CogworkerError


class WorkflowError(CogworkerError):
    """A workflow cannot be started or read: the plugin is off, the broker keeps no
    results, or the steps are not a workflow."""


class WorkflowFailedError(WorkflowError):
    """The workflow failed: ``step`` (counted from 0) is where, ``error`` why."""

    def __init__(self, workflow_id: str, step: int | None, error: str | None) -> None:
        self.workflow_id = workflow_id
        self.step = step
        self.error = error
        where = f"at step {step + 1}" if step is not None else "at an unknown step"
        super().__init__(f"workflow {workflow_id} failed {where}: {error or 'no reason kept'}")


class WorkflowTimeoutError(WorkflowError, TimeoutError):
    """No result within the time given; the workflow may still finish later."""

    def __init__(self, what: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(f"{what} has no result after {timeout:g} s; it may still finish: "
                         "wait longer, or look at its steps (cogworker status, the retry "
                         "and dead sets)")
