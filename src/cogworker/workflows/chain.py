"""``chain(a.s(1), b.s(), c.s())``: run a, then b with a's result, then c with b's.

Written and checked at once: every step must be a :class:`Signature` of one app, the
first must fit its job as written (nothing comes before it), and each later ``s`` step
with the previous step's result in front of its arguments (an ``si`` step as written).
:meth:`Chain.apply_async` records the workflow as running and pushes the first step
through the ordinary push path; each later step is pushed by the results store, once,
when the step before it finished (:mod:`cogworker.workflows.steps`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from cogworker.core.errors import JobCallError
from cogworker.core.payload import Payload
from cogworker.core.signatures import Signature
from cogworker.workflows.errors import WorkflowError
from cogworker.workflows.host import options_of, plugin_host, result_store
from cogworker.workflows.results import WorkflowResult
from cogworker.workflows.steps import MARKER, Later, chain_marker


def check_steps(steps: Sequence[object], what: str) -> list[Signature]:
    """The steps as signatures of one app; :class:`WorkflowError` otherwise."""
    if not steps:
        raise WorkflowError(f"a {what} needs at least one step: {what}(job.s(...), ...)")
    signatures: list[Signature] = []
    for index, item in enumerate(steps):
        if not isinstance(item, Signature):
            raise WorkflowError(f"step {index + 1} of the {what} is {item!r:.100}, not a "
                                "signature: write job.s(...) or job.si(...)")
        signatures.append(item)
    if any(signature.host is not signatures[0].host for signature in signatures):
        raise WorkflowError(f"the steps of a {what} must be jobs of one app")
    return signatures


def laid_out_at(signature: Signature, index: int, what: str, *,
                with_result: bool) -> list[object]:
    """The step's stored arguments at place ``index``; the error names the place."""
    try:
        return signature.laid_out(with_result=with_result)
    except JobCallError as exc:
        raise JobCallError(exc.job, exc.signature, f"step {index + 1} of the {what}, "
                           f"{exc.arguments}", exc.problem) from None


class Chain:
    """Steps that run one after the other, each (``s``) receiving the previous result."""

    def __init__(self, *steps: Signature) -> None:
        self.steps: tuple[Signature, ...] = tuple(check_steps(steps, "chain"))
        for index, step in enumerate(self.steps):
            laid_out_at(step, index, "chain", with_result=self._takes_result(index))

    def _takes_result(self, index: int) -> bool:
        return index > 0 and self.steps[index].takes_result

    def apply_async(self) -> WorkflowResult:
        """Start the chain: record it, push its first step; returns its handle.

        Raises :class:`WorkflowError` when the workflows plugin is not active or the
        broker keeps no results, and the broker's errors when the push fails.
        """
        app = plugin_host(self.steps[0].host)
        ttl = options_of(app).result_ttl
        store = result_store(app)
        now = app.clock()
        payloads: list[Payload] = [
            step.payload(now, with_result=self._takes_result(index))
            for index, step in enumerate(self.steps)]
        workflow_id = uuid.uuid4().hex
        later = [Later(payload, self._takes_result(index))
                 for index, payload in enumerate(payloads) if index > 0]
        first = payloads[0]
        first[MARKER] = chain_marker(workflow_id, ttl, later)
        store.start(workflow_id, len(payloads), ttl)
        if app.submit(first) is None:
            store.fail(workflow_id, 0, "the first step was not pushed: a client middleware "
                       "or a unique lock stopped it", ttl)
        return WorkflowResult(app, workflow_id, [str(payload["jid"]) for payload in payloads])

    delay = apply_async

    def __repr__(self) -> str:
        return f"chain({', '.join(repr(step) for step in self.steps)})"


def chain(*steps: Signature) -> Chain:
    """``chain(a.s(1), b.s(), c.s())``: see :class:`Chain`; start it with ``apply_async()``."""
    return Chain(*steps)
