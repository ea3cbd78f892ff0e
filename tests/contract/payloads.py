"""Payloads for the contract suite: real job payloads, each with its own jid."""

from __future__ import annotations

import json
import uuid
from typing import Any


def job(queue: str = "default", *, jid: str | None = None, klass: str = "Work",
        **fields: Any) -> str:
    """The raw payload of one job (compact JSON, as cogworker stores it)."""
    payload = {"class": klass, "args": [], "queue": queue,
               "jid": jid or uuid.uuid4().hex[:24], "created_at": 1.0, **fields}
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def jid_of(raw: str) -> str:
    jid: str = json.loads(raw)["jid"]
    return jid


def field_of(raw: str, name: str) -> Any:
    return json.loads(raw).get(name)
