"""What every introspection class is built from, and the job-record view they share.

The API classes need only a broker-like object with ``client`` (a ``redis.Redis`` returning
bytes), ``keys`` (:class:`~cogworker.redis.keys.KeySchema`) and ``scripts``
(:class:`~cogworker.redis.scripts.Scripts`). An :class:`~cogworker.app.App` works too: its
``broker`` attribute is used.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from cogworker.core.payload import UNPARSEABLE_CLASS, Payload
from cogworker.redis.requeue import RedisParts

PAGE_SIZE = 50
SYNTHETIC_JID_PREFIX = "unparseable-"


BrokerLike = RedisParts
"""The parts of :class:`~cogworker.redis.broker.RedisBroker` the API uses."""


class HasBroker(Protocol):
    """An App-like object."""

    @property
    def broker(self) -> BrokerLike: ...


Source = BrokerLike | HasBroker


def resolve_broker(source: Source) -> BrokerLike:
    """The ``broker`` of an App-like object, or the broker itself."""
    broker = getattr(source, "broker", None)
    if broker is not None:
        return broker  # type: ignore[no-any-return]
    if all(hasattr(source, name) for name in ("client", "keys", "scripts")):
        return source  # type: ignore[return-value]
    raise TypeError(
        f"expected a RedisBroker or an App with a .broker, not {type(source).__name__}"
    )


def text(value: bytes | str) -> str:
    """A Redis reply as text (invalid UTF-8 replaced, never raised)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def parse_object(raw: str) -> Payload | None:
    """The JSON object in ``raw``, or None when it is not one."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def synthetic_jid(raw: str) -> str:
    """The stand-in jid of an entry that is not a JSON object (stable for the same bytes)."""
    return SYNTHETIC_JID_PREFIX + hashlib.sha1(raw.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class JobRecord:
    """One stored job: its exact raw string and the fields read from it.

    ``item`` is None when the raw string is not a JSON object; ``klass`` is then
    ``"(unparseable)"`` and ``jid`` a stand-in (``unparseable-`` + 12 hex of its SHA-1).
    """

    value: str
    item: Payload | None = field(compare=False)

    @classmethod
    def from_raw(cls, raw: bytes | str) -> JobRecord:
        value = text(raw)
        return cls(value, parse_object(value))

    @property
    def raw(self) -> str:
        return self.value

    @property
    def klass(self) -> str:
        klass = self.item.get("class") if self.item is not None else None
        return klass if isinstance(klass, str) else UNPARSEABLE_CLASS

    @property
    def args(self) -> list[Any]:
        args = self.item.get("args") if self.item is not None else None
        return args if isinstance(args, list) else []

    @property
    def queue(self) -> str | None:
        queue = self.item.get("queue") if self.item is not None else None
        return queue if isinstance(queue, str) and queue else None

    @property
    def jid(self) -> str:
        jid = self.item.get("jid") if self.item is not None else None
        return jid if isinstance(jid, str) and jid else synthetic_jid(self.value)

    def get(self, name: str, default: Any = None) -> Any:
        """A payload field, or ``default``."""
        return default if self.item is None else self.item.get(name, default)

    @property
    def requeueable(self) -> bool:
        """Whether this can be put back on a queue (a real job naming its queue)."""
        return self.item is not None and self.klass != UNPARSEABLE_CLASS and bool(self.queue)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {"jid": self.jid, "class": self.klass, "queue": self.queue, "args": self.args,
                "created_at": self.get("created_at"), "enqueued_at": self.get("enqueued_at")}
