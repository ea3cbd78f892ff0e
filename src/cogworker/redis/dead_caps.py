"""The dead set's default caps, for :class:`~cogworker.redis.broker.RedisBroker`'s
signature and the job sets facet (:mod:`cogworker.redis.job_sets`), which the broker
imports only on first use."""

from __future__ import annotations

DEFAULT_DEAD_MAX_JOBS = 10_000
DEFAULT_DEAD_TIMEOUT = 180 * 86_400.0  # six months, in seconds
