"""Reading what workflows produced: :class:`JobResult` (one step's result, ``app.result(jid)``)
and :class:`WorkflowResult` (a chain's final result and state), both polling the results
store until the answer is there or the time given has passed."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cogworker.core.broker import WorkflowRecord
from cogworker.core.plugin_host import PluginHost
from cogworker.workflows.errors import WorkflowFailedError, WorkflowTimeoutError
from cogworker.workflows.host import result_store

T = TypeVar("T")
_FIRST_POLL = 0.01
_LONGEST_POLL = 0.25


def poll(read: Callable[[], T | None], what: str, timeout: float | None) -> T:
    """``read()`` until it answers something; :class:`WorkflowTimeoutError` after
    ``timeout`` seconds (None: wait for ever). Polls back off from 10 ms to 250 ms."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = _FIRST_POLL
    while True:
        found = read()
        if found is not None:
            return found
        if deadline is not None and time.monotonic() >= deadline:
            raise WorkflowTimeoutError(what, float(timeout or 0))
        left = _LONGEST_POLL if deadline is None else deadline - time.monotonic()
        time.sleep(max(0.0, min(pause, left)))
        pause = min(pause * 2, _LONGEST_POLL)


class JobResult:
    """The stored result of one workflow step, by jid (``app.result(jid)``). Only steps
    of a workflow have one."""

    def __init__(self, app: PluginHost, jid: str) -> None:
        self.app = app
        self.jid = jid

    def _text(self) -> str | None:
        return result_store(self.app).results([self.jid])[0]

    def ready(self) -> bool:
        """True once the step finished and its result is stored."""
        return self._text() is not None

    def get(self, timeout: float | None = 10.0) -> Any:
        """The step's result (decoded JSON), waiting up to ``timeout`` seconds for it."""
        return json.loads(poll(self._text, f"job {self.jid}", timeout))


class WorkflowResult:
    """A started workflow: its id, its steps' jids, its state and, once it succeeded,
    its result (the last step's)."""

    def __init__(self, app: PluginHost, workflow_id: str, jids: Sequence[str]) -> None:
        self.app = app
        self.id = workflow_id
        self.jids: tuple[str, ...] = tuple(jids)

    def state(self) -> WorkflowRecord | None:
        """The workflow's record now (None once it expired)."""
        return result_store(self.app).workflow(self.id)

    def ready(self) -> bool:
        """True once the workflow succeeded or failed."""
        record = self.state()
        return record is not None and record.state != "running"

    def _settled(self) -> WorkflowRecord | None:
        record = self.state()
        return record if record is not None and record.state != "running" else None

    def get(self, timeout: float | None = 10.0) -> Any:
        """The workflow's result, waiting up to ``timeout`` seconds; raises
        :class:`WorkflowFailedError` when it failed, :class:`WorkflowTimeoutError` when
        it has not finished in time."""
        record = poll(self._settled, f"workflow {self.id}", timeout)
        if record.state == "failed":
            raise WorkflowFailedError(self.id, record.failed_step, record.error)
        jid = record.result_jid or self.jids[-1]
        return JobResult(self.app, jid).get(timeout=0)

    def results(self) -> list[Any]:
        """Each step's result so far, in order (None for a step without one yet)."""
        texts = result_store(self.app).results(list(self.jids))
        return [None if text is None else json.loads(text) for text in texts]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} steps={len(self.jids)}>"
