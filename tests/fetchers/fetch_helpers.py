"""Shared names of the fetcher tests."""

from __future__ import annotations

from collections.abc import Callable

IDENTITY = "host-a:101:feedbeef"
"""The identity of the process under test (its in-progress list is ``inprogress:IDENTITY``)."""

MakeJob = Callable[..., str]
"""``make_job(queue="default", **fields)`` -> a raw payload with a fresh jid."""

Push = Callable[..., None]
"""``push(raw, ...)`` stores raws on their queues the way clients do."""
