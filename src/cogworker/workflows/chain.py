"""``chain(a.s(1), b.s(), c.s())``: run a, then b with a's result, then c with b's.

Written and checked at once: every step must be a :class:`Signature` of one app, or (after
the first) a :class:`~cogworker.workflows.groups.Group`; the first must fit its job as
written (nothing comes before it), each later ``s`` step (a group's ``s`` members too)
with the previous step's result in front of its arguments (an ``si`` step as written). A
step after a group receives the list of the group's results. :meth:`Chain.apply_async`
records the workflow as running and pushes the first step through the ordinary push path;
each later step is pushed by the results store, once, when the step before it finished
(:mod:`cogworker.workflows.steps`); a group is started by the built-in job
:data:`~cogworker.plugins.workflows_names.GROUP_LAUNCH` as a chord whose unlock goes on with the
rest of the chain.
"""

from __future__ import annotations

import uuid

from cogworker.core.payload import Payload, complete
from cogworker.core.signatures import Signature
from cogworker.plugins.batches.building import new_bid
from cogworker.plugins.batches.runtime import runtime_of
from cogworker.plugins.workflows_names import GROUP_LAUNCH, MARKER
from cogworker.workflows.errors import WorkflowError
from cogworker.workflows.groups import Group
from cogworker.workflows.host import options_of, plugin_host, result_store
from cogworker.workflows.placing import check_one_app, laid_out_at
from cogworker.workflows.results import WorkflowResult
from cogworker.workflows.steps import Later, chain_marker

Step = Signature | Group


def _signatures(steps: tuple[Step, ...]) -> list[Signature]:
    """Every signature of the chain, members of its groups included, checked."""
    if not steps:
        raise WorkflowError("a chain needs at least one step: chain(job.s(...), ...)")
    found: list[Signature] = []
    for index, item in enumerate(steps):
        if isinstance(item, Group) and index > 0:
            found.extend(item.steps)
        elif isinstance(item, Signature):
            found.append(item)
        else:
            raise WorkflowError(f"step {index + 1} of the chain is {item!r:.100}, not a "
                                "signature (or, after the first step, a group): write "
                                "job.s(...), job.si(...) or group(...)")
    check_one_app(found, "chain")
    return found


class Chain:
    """Steps that run one after the other, each (``s``) receiving the previous result."""

    def __init__(self, *steps: Step) -> None:
        self.signatures = _signatures(steps)
        self.steps: tuple[Step, ...] = steps
        for index, step in enumerate(self.steps):
            for signature in step.steps if isinstance(step, Group) else (step,):
                laid_out_at(signature, index, "chain",
                            with_result=index > 0 and signature.takes_result)

    def _later(self, step: Step, now: float) -> Later:
        if isinstance(step, Signature):
            return Later(step.payload(now, with_result=step.takes_result), step.takes_result)
        members = tuple(Later(member.payload(now, with_result=member.takes_result),
                              member.takes_result) for member in step.steps)
        launch = complete({"class": GROUP_LAUNCH, "args": [],
                           "queue": members[0].payload["queue"]}, now)
        return Later(launch, True, members, new_bid())

    def apply_async(self) -> WorkflowResult:
        """Start the chain: record it, push its first step; returns its handle.

        Raises :class:`WorkflowError` when the workflows plugin is not active or the
        broker keeps no results, ``BatchError`` when the chain holds a group and the
        batches plugin is not active, and the broker's errors when the push fails.
        """
        first_step = self.steps[0]
        assert isinstance(first_step, Signature)  # checked by _signatures
        app = plugin_host(first_step.host)
        ttl = options_of(app).result_ttl
        if any(isinstance(step, Group) for step in self.steps):
            runtime_of(app)  # a group runs as a batch: BatchError when batches is off
        store = result_store(app)
        now = app.clock()
        first: Payload = first_step.payload(now, with_result=False)
        later = [self._later(step, now) for step in self.steps[1:]]
        workflow_id = uuid.uuid4().hex
        first[MARKER] = chain_marker(workflow_id, ttl, later)
        store.start(workflow_id, len(self.steps), ttl)
        if app.submit(first) is None:
            store.fail(workflow_id, 0, "the first step was not pushed: a client middleware "
                       "or a unique lock stopped it", ttl)
        jids = [str(first["jid"])]
        for item in later:
            jids.extend(str(member.payload["jid"]) for member in item.members)
            if not item.members:
                jids.append(str(item.payload["jid"]))
        return WorkflowResult(app, workflow_id, jids)

    delay = apply_async

    def __repr__(self) -> str:
        return f"chain({', '.join(repr(step) for step in self.steps)})"


def chain(*steps: Step) -> Chain:
    """``chain(a.s(1), b.s(), c.s())``: see :class:`Chain`; start it with ``apply_async()``."""
    return Chain(*steps)
