"""``group(a.s(1), a.s(2))`` and ``chord(group, callback.s())``, built on batches.

A group is a batch (the ``batches`` plugin) of its members, each a workflow step whose
result is stored. :meth:`Group.apply_async` returns a :class:`GroupResult`: the members'
jids, the batch's id, and once every member finished, their results in the members' order.

A chord is a group whose batch's *success* callback (which the batches plugin fires exactly
once, when every member succeeded) is the built-in job :data:`CHORD_UNLOCK`. That job reads
the members' results in order from the results store and, as a workflow step of its own
(its jid's stored result is its flag), pushes the chord's callback with the list in front
of its arguments, exactly once (:meth:`~cogworker.core.broker.ResultStore.finish_step`).
The callback's result is the chord's. A member that dies fails the chord (its callback
never runs); a member that fails and is retried only delays it.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from cogworker.core.broker import ResultStore
from cogworker.core.broker.results import READ_LIMIT
from cogworker.core.current_job import current_job
from cogworker.core.payload import Payload, dumps
from cogworker.core.plugin_host import PluginHost
from cogworker.core.signatures import Signature
from cogworker.plugins.batches import Batch
from cogworker.plugins.workflows_names import CHORD_UNLOCK, MARKER
from cogworker.workflows.finishing import write_finished
from cogworker.workflows.host import options_of, plugin_host, result_store
from cogworker.workflows.placing import check_steps, laid_out_at
from cogworker.workflows.results import WorkflowResult
from cogworker.workflows.steps import Later, StepMarker, laters, member_marker

logger = logging.getLogger("cogworker.plugin.workflows")


class GroupResult(WorkflowResult):
    """A started group: its members' jids (``jids``), its batch (``bid``), and its
    results in order once every member finished (``get``)."""

    def __init__(self, app: PluginHost, workflow_id: str, jids: Sequence[str],
                 bid: str) -> None:
        super().__init__(app, workflow_id, jids)
        self.bid = bid

    def get(self, timeout: float | None = 10.0) -> Any:
        """The members' results in order, waiting up to ``timeout`` seconds; raises
        :class:`WorkflowFailedError` when a member died."""
        super().get(timeout)
        return self.results()


class Group:
    """Members that run side by side (each as written: a member takes no previous result)."""

    def __init__(self, *steps: Signature) -> None:
        """Signatures of one app (each already checked to fit as written, or with a
        previous result in front, which a chain gives the members of a group inside it)."""
        self.steps: tuple[Signature, ...] = tuple(check_steps(steps, "group"))

    def check_alone(self) -> None:
        """A group of its own (or a chord's) gives its members nothing in front:
        :class:`JobCallError` for a member that does not fit as written."""
        for index, step in enumerate(self.steps):
            laid_out_at(step, index, "group", with_result=False)

    def _members(self, app: PluginHost, workflow_id: str, ttl: float,
                 member: str) -> list[Payload]:
        now = app.clock()
        payloads = [step.payload(now, with_result=False) for step in self.steps]
        for index, payload in enumerate(payloads):
            payload[MARKER] = member_marker(workflow_id, index, ttl, member)
        return payloads

    def apply_async(self) -> GroupResult:
        """Start the group: one batch of its members; returns its handle. A member that
        does not fit as written (a group of its own gives nothing in front) is a
        :class:`JobCallError` here, before anything is pushed."""
        self.check_alone()
        app = plugin_host(self.steps[0].host)
        ttl = options_of(app).result_ttl
        workflow_id = uuid.uuid4().hex
        payloads = self._members(app, workflow_id, ttl, "group")
        batch = Batch(app, description=f"group {workflow_id}", nest=False)
        result_store(app).start(workflow_id, len(payloads), ttl)
        for payload in payloads:
            batch.push(payload)
        bid = batch.commit()
        return GroupResult(app, workflow_id, [str(p["jid"]) for p in payloads], bid)

    delay = apply_async

    def __repr__(self) -> str:
        return f"group({', '.join(repr(step) for step in self.steps)})"


class Chord:
    """A group and a callback that receives the list of the group's results in order."""

    def __init__(self, header: Group | Sequence[Signature], body: Signature) -> None:
        self.header = header if isinstance(header, Group) else Group(*header)
        self.header.check_alone()
        check_steps([*self.header.steps, body], "chord")
        laid_out_at(body, len(self.header.steps), "chord", with_result=body.takes_result)
        self.body = body

    def apply_async(self) -> WorkflowResult:
        """Start the chord: one batch of the group's members whose success runs the
        callback; returns the handle whose ``get`` is the callback's result."""
        app = plugin_host(self.body.host)
        ttl = options_of(app).result_ttl
        workflow_id = uuid.uuid4().hex
        payloads = self.header._members(app, workflow_id, ttl, "chord")
        member_jids = [str(payload["jid"]) for payload in payloads]
        callback = self.body.payload(app.clock(), with_result=self.body.takes_result)
        unlock = (CHORD_UNLOCK, workflow_id, ttl, member_jids,
                  [Later(callback, self.body.takes_result).to_json()], len(payloads))
        batch = Batch(app, description=f"chord {workflow_id}", on_success=unlock, nest=False)
        result_store(app).start(workflow_id, len(payloads) + 2, ttl)
        for payload in payloads:
            batch.push(payload)
        batch.commit()
        return WorkflowResult(app, workflow_id, [*member_jids, str(callback["jid"])])

    delay = apply_async

    def __repr__(self) -> str:
        return f"chord({self.header!r}, {self.body!r})"


def group(*steps: Signature) -> Group:
    """``group(a.s(1), a.s(2))``: see :class:`Group`; start it with ``apply_async()``."""
    return Group(*steps)


def chord(header: Group | Sequence[Signature], body: Signature) -> Chord:
    """``chord(group(...), callback.s())``: see :class:`Chord`."""
    return Chord(header, body)


def _member_results(store: ResultStore, jids: Sequence[str]) -> list[str | None]:
    texts: list[str | None] = []
    for start in range(0, len(jids), READ_LIMIT):
        texts.extend(store.results(list(jids[start:start + READ_LIMIT])))
    return texts


def unlock_chord(app: PluginHost, workflow_id: str, ttl: float, member_jids: Sequence[str],
                 rest: object, step: int) -> None:
    """The body of :data:`CHORD_UNLOCK`: as step ``step``, whose result is the list of
    the members' results, push the steps in ``rest`` (the callback, or the rest of a
    chain) with that list, once."""
    store = result_store(app)
    texts = _member_results(store, member_jids)
    missing = [jid for jid, text in zip(member_jids, texts, strict=True) if text is None]
    if missing:
        store.fail(workflow_id, step, f"the results of {len(missing)} member(s) are gone "
                   f"(expired? first: {missing[0]}): the callback cannot get them", ttl)
        return
    results = [json.loads(text) for text in texts if text is not None]
    marker = StepMarker(workflow_id, step, ttl, laters(rest))
    write_finished(store, marker.finished(current_job().jid, dumps(results), app.clock()))


def launch_group(app: PluginHost, result: object, spec: dict[str, Any]) -> None:
    """The body of :data:`~cogworker.plugins.workflows_names.GROUP_LAUNCH`: a group inside a
    chain, as a chord whose batch (its ``bid`` chosen when the chain was written) goes on
    with the rest of the chain. A launch run again after a crash finds the batch sealed
    and does nothing; one that crashed between its pushes and the seal pushes the members
    again (the same jids: their results and the chain's next push stay single)."""
    workflow_id, step, ttl, bid = spec["id"], int(spec["step"]), float(spec["ttl"]), \
        str(spec["bid"])
    from cogworker.api.batches import Batches  # the API package: a worker's, not a push's

    if Batches(app).get(bid) is not None:
        logger.warning("workflow %s: the group of step %d (batch %s) was started before; "
                       "not again", workflow_id, step + 1, bid)
        return
    members = laters(spec["members"])
    payloads: list[Payload] = []
    for member in members:
        payload = dict(member.payload)
        if member.with_result:
            payload["args"] = [result, *payload.get("args", [])]
        payload[MARKER] = member_marker(workflow_id, step, ttl, "chord")
        payloads.append(payload)
    unlock = (CHORD_UNLOCK, workflow_id, ttl, [str(p["jid"]) for p in payloads],
              spec["rest"], step)
    batch = Batch(app, description=f"workflow {workflow_id} step {step + 1}",
                  on_success=unlock, bid=bid, nest=False)
    for payload in payloads:
        batch.push(payload)
    batch.commit()
