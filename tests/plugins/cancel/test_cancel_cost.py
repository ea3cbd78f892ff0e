"""The cost rule: with the ``cancel`` plugin on, a job that nobody cancels costs no Redis
command (INFO commandstats, which counts each command a Lua script runs), and the plugin's
own commands (its start-up read, its subscription, its periodic re-read) do not grow with
the number of jobs."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis

from cogworker.app import App
from cogworker.plugins.cancel import WATCH_KEY
from helpers.threaded_worker import WAIT, Countdown, working

JOBS = 400
MakeApp = Callable[..., App]


def calls(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()
            if name != "cmdstat_info"}


BATCH_PARTS = frozenset({"lrange", "lpush", "ltrim", "sismember", "del", "blmove"})
"""Commands of the fetch and ack scripts whose counts follow how many jobs each fetch and
each ack took, which depends on the threads' timing (fetching ahead): one ``LRANGE`` per
fetch, one ``DEL`` per ack batch."""


def per_job_shape(counts: dict[str, int]) -> dict[str, int]:
    """``counts`` without the batch-sized parts, and without the ``EVALSHA`` of each fetch
    (one per ``LRANGE``) and each ack batch (one per ``DEL``): what is left grows with the
    jobs only if something runs a command per job (``LREM``: one per job, both ways)."""
    shaped = {name: count for name, count in counts.items() if name not in BATCH_PARTS}
    shaped["evalsha"] = (counts.get("evalsha", 0) - counts.get("lrange", 0)
                         - counts.get("del", 0))
    return shaped


def commands_for(app: App, client: redis.Redis) -> dict[str, int]:
    """Redis commands while a worker starts, runs :data:`JOBS` jobs and stops."""
    done = Countdown(JOBS)

    @app.job(name="tick")
    def tick(n: int) -> None:
        done.record(n)

    app.push_bulk(tick, [[n] for n in range(JOBS)])
    before = calls(client)
    with working(app):
        assert done.done.wait(WAIT)
    after = calls(client)
    return {name: count - before.get(name, 0) for name, count in after.items()
            if count != before.get(name, 0)}


@pytest.fixture
def make_app(redis_url: str, namespace: str) -> Iterator[MakeApp]:
    apps: list[App] = []

    def make(*plugins: str) -> App:
        app = App(redis_url=redis_url, namespace=namespace, concurrency=4, timeout=1.0,
                  plugins=plugins)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


def test_jobs_cost_no_redis_command_with_the_plugin_on(make_app: MakeApp,
                                                       redis_client: redis.Redis) -> None:
    off, on = make_app("no:cancel"), make_app()
    without_each = per_job_shape(commands_for(off, redis_client))
    with_each = per_job_shape(commands_for(on, redis_client))
    without, with_plugin = sum(without_each.values()), sum(with_each.values())
    assert WATCH_KEY not in off.extras
    assert on.extras[WATCH_KEY][1].refreshes >= 1  # the plugin did run: it read at start
    extra = with_plugin - without
    changed = {name: with_each.get(name, 0) - without_each.get(name, 0)
               for name in {*with_each, *without_each}}
    print(f"\nRedis commands for {JOBS} jobs: {without} with no:cancel, {with_plugin} with "
          f"cancel on ({extra:+d}, {extra / JOBS:+.3f} per job); by command: "
          f"{ {name: delta for name, delta in sorted(changed.items()) if delta} }")
    # A command per job would add 400 to one command (an EVALSHA counts once, and so does
    # every command its script runs). The plugin's own: its read at start and after
    # subscribing (ZRANGEBYSCORE), SUBSCRIBE, and the HELLO/PING of its connection; the rest
    # is the timing noise of once-a-second writes (heartbeats, stats), a few either way.
    assert all(delta < JOBS / 10 for delta in changed.values()), changed
    assert with_each["lrem"] == without_each["lrem"] == JOBS  # one ack each, both ways
