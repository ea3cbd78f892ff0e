"""How a workflow travels inside its steps' payloads: the ``workflow`` field.

A step of a chain carries, in its payload's ``workflow`` field, the workflow's id, its own
place (``step``, from 0), the TTL of results, and the steps still to come (``rest``), each
a complete payload and whether it takes this step's result in front of its arguments. So
a worker finishing a step knows the next step without reading anything, and builds it in
memory; the results store pushes it (:meth:`~cogworker.core.broker.ResultStore.finish_step`).
A member of a group carries the group's id, its index and ``member``: ``"group"`` (a plain
group, done when every member finished) or ``"chord"`` (the batch's success callback
goes on from there, :mod:`cogworker.workflows.chord`); no ``rest``.

The field is plain JSON, as the rest of the payload: a Ruby worker ignores it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cogworker.core.broker import FinishedStep, NextStep
from cogworker.core.payload import Payload, encode
from cogworker.plugins.workflows_names import MARKER


@dataclass(frozen=True, slots=True)
class Later:
    """A step still to come: its complete payload (``args`` after the result's place) and
    whether the result of the step before it goes in front of its arguments; or, for a
    group inside a chain, its ``members`` (each a ``Later``) and the ``bid`` of its batch
    (chosen when the chain is written, so a re-run of its launch finds the same batch)."""

    payload: Payload
    with_result: bool
    members: tuple[Later, ...] = ()
    bid: str = ""

    def to_json(self) -> dict[str, Any]:
        if self.members:
            return {"group": [member.to_json() for member in self.members], "bid": self.bid,
                    "job": self.payload, "with_result": self.with_result}
        return {"job": self.payload, "with_result": self.with_result}


@dataclass(frozen=True, slots=True)
class StepMarker:
    """The ``workflow`` field of one step's payload."""

    workflow_id: str
    step: int
    ttl: float
    rest: tuple[Later, ...] = ()
    member: str | None = None
    """``"group"`` or ``"chord"`` for a member of a group: its result is stored, nothing
    follows it by itself."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.workflow_id, "step": self.step, "ttl": self.ttl}
        if self.member is not None:
            data["member"] = self.member
        else:
            data["rest"] = [later.to_json() for later in self.rest]
        return data

    @classmethod
    def parse(cls, data: object) -> StepMarker:
        """The marker a payload carries; ``ValueError`` for anything malformed."""
        if not isinstance(data, Mapping):
            raise ValueError(f"the {MARKER!r} field is not an object: {data!r:.200}")
        workflow_id, step, ttl = data.get("id"), data.get("step"), data.get("ttl")
        if not isinstance(workflow_id, str) or not isinstance(step, int) or \
                isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
            raise ValueError(f"the {MARKER!r} field lacks an id, a step or a TTL: "
                             f"{dict(data)!r:.200}")
        rest, member = data.get("rest", []), data.get("member")
        if not isinstance(rest, list) or member not in (None, "group", "chord"):
            raise ValueError(f"the {MARKER!r} field's rest or member is malformed: "
                             f"{dict(data)!r:.200}")
        return cls(workflow_id, step, float(ttl), tuple(_later(item) for item in rest),
                   member=member)

    @property
    def last(self) -> bool:
        """This step's result is the workflow's (the last step of a chain)."""
        return self.member is None and not self.rest

    def finished(self, jid: str, result_json: str, now: float) -> FinishedStep:
        """What the results store writes when this step returned ``result_json``: its
        result and, when a step follows, that step's payload, ready to push."""
        return FinishedStep(workflow_id=self.workflow_id, step=self.step, jid=jid,
                            result=result_json, ttl=self.ttl,
                            next=self._next(result_json, now), last=self.last,
                            completes_group=self.member == "group")

    def _next(self, result_json: str, now: float) -> NextStep | None:
        if not self.rest:
            return None
        head, *tail = self.rest
        job = dict(head.payload)
        if head.members:  # a group: its launch job gets the result and what follows
            job["args"] = [json.loads(result_json), {
                "id": self.workflow_id, "step": self.step + 1, "ttl": self.ttl,
                "bid": head.bid, "members": [member.to_json() for member in head.members],
                "rest": [later.to_json() for later in tail]}]
        else:
            if head.with_result:
                job["args"] = [json.loads(result_json), *job.get("args", [])]
            job[MARKER] = StepMarker(self.workflow_id, self.step + 1, self.ttl,
                                     tuple(tail)).to_json()
        job["enqueued_at"] = now
        return NextStep(queue=str(job["queue"]), raw=encode(job))


def _later(item: object) -> Later:
    if not isinstance(item, Mapping) or not isinstance(item.get("job"), dict):
        raise ValueError(f"a later step is not an object with a job: {item!r:.200}")
    members = item.get("group", [])
    if not isinstance(members, list):
        raise ValueError(f"a later group's members are not a list: {item!r:.200}")
    return Later(dict(item["job"]), bool(item.get("with_result")),
                 tuple(_later(member) for member in members), str(item.get("bid", "")))


def laters(items: object) -> tuple[Later, ...]:
    """Steps still to come, from their JSON; ``ValueError`` for anything malformed."""
    if not isinstance(items, list):
        raise ValueError(f"the steps still to come are not a list: {items!r:.200}")
    return tuple(_later(item) for item in items)


def chain_marker(workflow_id: str, ttl: float, later: Sequence[Later]) -> dict[str, Any]:
    """The ``workflow`` field of a chain's first step."""
    return StepMarker(workflow_id, 0, ttl, tuple(later)).to_json()


def member_marker(workflow_id: str, step: int, ttl: float, member: str) -> dict[str, Any]:
    """The ``workflow`` field of a member of a ``"group"`` or ``"chord"`` (``step``: its
    index in a group or chord of its own, the group's place inside a chain)."""
    return StepMarker(workflow_id, step, ttl, member=member).to_json()
