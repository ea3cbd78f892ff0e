"""A settle whose reply is lost to a connection reset: the script ran (and pushed the
callback); the worker retries it on a new connection, the retry changes nothing, and the
callback runs once."""

from __future__ import annotations

from cogworker.app import App
from cogworker.redis.server import RedisServer
from helpers.cutting_proxy import CuttingProxy
from helpers.threaded_worker import working
from plugins.batches.conftest import Ledger


def test_a_settle_reply_lost_to_a_reset_fires_the_callback_once(
        app: App, redis_server: RedisServer, namespace: str, ledger: Ledger) -> None:
    def register(target: App) -> None:
        @target.job(name="work")
        def work() -> None:
            ledger.add("ran", None)

        @target.job(name="done")
        def done(bid: str, counts: dict[str, int]) -> None:
            ledger.add("done", bid)

    register(app)
    with app.batch(on_success="done") as batch:  # pushed and sealed straight to Redis
        app.push({"class": "work", "args": []})
    assert redis_server.port is not None
    with CuttingProxy(redis_server.port, f":batch:{batch.bid}".encode()) as proxy:
        worker_app = App(redis_url=proxy.url, namespace=namespace, concurrency=2,
                         timeout=1.0, poll_interval=0.2)
        register(worker_app)
        try:
            with working(worker_app):
                ledger.wait_for(lambda led: led.of("done"))
        finally:
            worker_app.close()
        assert proxy.cuts == 1  # the worker's first command naming the batch: the settle
    assert ledger.of("ran") == [None]
    assert ledger.of("done") == [batch.bid]
    assert app.broker.queues.size("default") == 0
