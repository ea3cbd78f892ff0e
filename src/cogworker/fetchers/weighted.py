"""Queue order: weighted (repetition in the queue list is weight), or strict.

``["default", "default", "low"]`` tries ``default`` first about twice as often as ``low``:
the list is shuffled as it is (with its repeats) and then de-duplicated by first
occurrence, so a queue listed ``n`` times lands ahead of a queue listed once with
probability ``n / (n + 1)``. No queue is ever starved: every listed queue is tried on every
fetch, only the order changes.

Strict order (the ``strict_queue_order`` setting, ``cogworker run --strict``) tries the
queues in the order listed, every time: a queue is drained before the next one gets a
job, and a busy first queue starves the others (that is the point).
"""

from __future__ import annotations

import random
from collections.abc import Sequence, Set

ALL_PAUSED_PAUSE = 2.0
"""Seconds a fetch waits (at most its timeout) when every queue it reads is paused."""


def fetch_order(queues: Sequence[str], rng: random.Random, strict: bool = False) -> list[str]:
    """The distinct queue names in the order to try them this time."""
    if strict:
        return list(dict.fromkeys(queues))
    shuffled = list(queues)
    rng.shuffle(shuffled)
    return list(dict.fromkeys(shuffled))


def unpaused(queues: Sequence[str], paused: Set[str]) -> list[str]:
    """``queues`` (with repeats) without the paused ones."""
    return [queue for queue in queues if queue not in paused]
