"""Cancellation on a real three-master Redis Cluster: the cancel script's keys (the
cancellations and the queue or set the job waits in) share the namespace's hash slot, and
the announcement reaches a subscriber."""

from __future__ import annotations

import time

import pytest

from cogworker.api import Queue, ScheduledSet
from cogworker.api.cancel import CancelOutcome
from cogworker.app import App
from cogworker.core.broker import CANCELLATIONS
from helpers.redis_cluster import start_cluster
from helpers.redis_servers import RedisServerFactory

pytestmark = pytest.mark.slow


def test_a_waiting_job_is_cancelled_on_a_cluster(redis_server_factory: RedisServerFactory,
                                                  namespace: str) -> None:
    cluster = start_cluster(redis_server_factory)
    app = App(redis_url=cluster.url(0), namespace=namespace)
    try:
        @app.job(name="note")
        def note() -> None: ...

        queued, later = note.perform_async(), note.perform_in(3600)
        assert queued is not None and later is not None
        store = app.broker.extension(CANCELLATIONS)
        assert store is not None
        with store.subscribe() as subscription:
            assert app.cancel(queued).outcome is CancelOutcome.CANCELLED
            assert subscription.get(5.0) == queued
        assert app.cancel(later).outcome is CancelOutcome.CANCELLED
        assert Queue(app, "default").size() == 0 and ScheduledSet(app).size() == 0
        assert store.active(time.time()).keys() == {queued, later}
    finally:
        app.close()
