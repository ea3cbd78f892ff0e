"""``broker.extension(RESULTS)`` on Redis: workflow results and records.

* ``<ns>:result:<jid>`` (string): a step's result, its JSON, expiring with the TTL;
* ``<ns>:workflow:<id>`` (hash ``state``, ``steps``, ``finished``, ``failed_step``,
  ``error``, ``result_jid``): a workflow's record, its TTL renewed by every finished step.

Finishing a step is one script (``workflow_finish_step.lua``: SET NX of the result, the
record's count and TTL, and the next step's push: four to seven commands); failing a
workflow is another (``workflow_fail.lua``). In cluster mode every key shares the
namespace's hash tag, so both scripts may touch the queue keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import redis

from cogworker.core.broker.results import (
    READ_LIMIT,
    WORKFLOW_STATES,
    FinishedStep,
    FinishOutcome,
    WorkflowRecord,
)
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text, wire
from cogworker.redis.scripts import Scripts

PACKAGE = "cogworker.redis"
_OUTCOMES: dict[int, FinishOutcome] = {1: "finished", 0: "already", 2: "stopped"}


def _ms(ttl: float) -> int:
    if not ttl > 0:
        raise ValueError(f"a result TTL must be > 0 seconds, not {ttl!r}")
    return max(1, math.ceil(ttl * 1000))


class RedisResultStore:
    """:class:`cogworker.core.broker.ResultStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def start(self, workflow_id: str, steps: int, ttl: float) -> None:
        key = self._keys.workflow(workflow_id)
        pipe = self._client.pipeline(transaction=True)
        pipe.hset(key, mapping={"state": "running", "steps": steps, "finished": 0})
        pipe.pexpire(key, _ms(ttl))
        with translate_errors():
            pipe.execute()

    def finish_step(self, finished: FinishedStep) -> FinishOutcome:
        keys = [self._keys.result(finished.jid), self._keys.workflow(finished.workflow_id),
                self._keys.queues]
        mode = "1" if finished.last else "g" if finished.completes_group else "0"
        args: list[Any] = [finished.result, _ms(finished.ttl), mode, finished.jid]
        if finished.next is not None:
            keys.append(self._keys.queue(finished.next.queue))
            args += [finished.next.queue, self._keys.wakeup, wire(finished.next.raw)]
        reply = self._scripts.run(PACKAGE, "workflow_finish_step", keys, args)
        return _OUTCOMES[int(reply)]

    def fail(self, workflow_id: str, step: int, error: str, ttl: float) -> bool:
        reply = self._scripts.run(PACKAGE, "workflow_fail", [self._keys.workflow(workflow_id)],
                                  [step, error, _ms(ttl)])
        return bool(int(reply))

    def workflow(self, workflow_id: str) -> WorkflowRecord | None:
        with translate_errors():
            fields: dict[Any, Any] = self._client.hgetall(self._keys.workflow(workflow_id))
        data = {as_text(name): as_text(value) for name, value in fields.items()}
        return _record(workflow_id, data)

    def results(self, jids: Sequence[str]) -> list[str | None]:
        if len(jids) > READ_LIMIT:
            raise ValueError(f"read at most {READ_LIMIT} results at once, not {len(jids)}")
        if not jids:
            return []
        with translate_errors():
            values: list[Any] = self._client.mget([self._keys.result(jid) for jid in jids])
        return [None if value is None else as_text(value) for value in values]


def _record(workflow_id: str, data: dict[str, str]) -> WorkflowRecord | None:
    """The record a hash holds, or None for a missing or malformed one."""
    state = data.get("state")
    if state not in WORKFLOW_STATES:
        return None
    try:
        steps, finished = int(data.get("steps", "0")), int(data.get("finished", "0"))
        failed_step = int(data["failed_step"]) if "failed_step" in data else None
    except ValueError:
        return None
    return WorkflowRecord(workflow_id=workflow_id, state=state,  # type: ignore[arg-type]
                          steps=steps, finished=finished, failed_step=failed_step,
                          error=data.get("error"), result_jid=data.get("result_jid"))
