"""What every introspection class is built from, and the job-record view they share.

The API classes need a :class:`~cogworker.core.broker.Broker` (any broker: the Redis one,
the in-memory one...). An :class:`~cogworker.app.App` works too: its ``broker`` is used.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cogworker.core.broker import Broker
from cogworker.core.payload import UNPARSEABLE_CLASS, Payload

PAGE_SIZE = 50
SYNTHETIC_JID_PREFIX = "unparseable-"
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


@runtime_checkable
class HasBroker(Protocol):
    """An App-like object."""

    @property
    def broker(self) -> Broker: ...


@runtime_checkable
class _Facets(Protocol):
    """What tells a broker from anything else here (a friendly error for a wrong source)."""

    @property
    def queues(self) -> object: ...

    @property
    def sets(self) -> object: ...

    @property
    def processes(self) -> object: ...


Source = Broker | HasBroker


def resolve_broker(source: Source) -> Broker:
    """The ``broker`` of an App-like object, or the broker itself."""
    if isinstance(source, HasBroker):
        return source.broker
    if not isinstance(source, _Facets):
        raise TypeError(f"expected a broker (a cogworker.core.broker.Broker, such as "
                        f"RedisBroker) or an App with a .broker, not {type(source).__name__}")
    return source


def is_utf8(raw: str) -> bool:
    """Whether a raw read with ``surrogateescape`` came from valid UTF-8 bytes."""
    return raw.isascii() or not _ESCAPED_BYTE.search(raw)


def shown_text(raw: str) -> str:
    """``raw`` for display: each byte that was not UTF-8 replaced by U+FFFD."""
    if is_utf8(raw):
        return raw
    return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def parse_object(raw: str) -> Payload | None:
    """The JSON object in ``raw``, or None when it is not one."""
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def synthetic_jid(raw: str) -> str:
    """The stand-in jid of an entry that is not a JSON object (stable for the same bytes)."""
    data = raw.encode("utf-8", "surrogateescape")
    return SYNTHETIC_JID_PREFIX + hashlib.sha1(data).hexdigest()[:12]


@dataclass(frozen=True)
class JobRecord:
    """One stored job: its exact raw string and the fields read from it.

    ``value`` is the raw exactly as stored (bytes that are not UTF-8 kept with
    ``surrogateescape``, so it finds the entry again); the fields are read from a copy with
    each invalid byte replaced by U+FFFD. ``item`` is None when the raw string is not a
    JSON object; ``klass`` is then ``"(unparseable)"`` and ``jid`` a stand-in
    (``unparseable-`` + 12 hex of its SHA-1).
    """

    value: str
    item: Payload | None = field(compare=False)

    @classmethod
    def from_raw(cls, raw: str) -> JobRecord:
        return cls(raw, parse_object(shown_text(raw)))

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
