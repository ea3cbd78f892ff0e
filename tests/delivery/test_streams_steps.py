"""The ``streams`` fetch strategy (``examples/cogworker-streams``, installed as a third party
would install it) step by step against a real redis-server: every atomic step keeps the
contract's promises (write first, act only while the entry is still this consumer's,
recovery only of the dead), on the broker the app builds through its hooks."""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest
import redis
from cogworker_streams import plugin
from cogworker_streams.fetcher import StreamsFetcher
from cogworker_streams.names import GROUP, PACKAGE, RedisBackedBroker

import cogworker
from cogworker.core.broker import (
    Fetcher,
    LockClaim,
    RecoveryOptions,
    Relock,
    UnitOfWork,
)
from cogworker.core.errors import BrokerUnavailableError, ConfigurationError
from cogworker.redis import RedisAccess
from cogworker.redis.keys import KeySchema
from cogworker.redis.scripts import declared_key_count, script_source
from helpers.redis_servers import RedisServerFactory
from helpers.workers import wait_until
from runtime.support import jids_on, payload, push_raw

OPTIONS = RecoveryOptions(threshold=60.0, max_orphanings=3)
ME = "host:1:aaaaaaaaaaaa"


@pytest.fixture
def app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[cogworker.App]:
    application = cogworker.App(redis_url=redis_url, namespace=namespace)
    yield application
    application.close()


@pytest.fixture
def broker(app: cogworker.App) -> RedisBackedBroker:
    built = app.broker
    assert isinstance(built, RedisAccess)
    return built


def no_lock(raw: str) -> LockClaim | None:
    return None


class KeepOrder(random.Random):
    """A fetch order that is the order given (no shuffle)."""

    def shuffle(self, x: Any, random: Any = None) -> None:
        return None


def fetcher_for(broker: RedisBackedBroker, identity: str = ME, relock: Relock = no_lock,
                idle_max_interval: float = 1.0) -> StreamsFetcher:
    return StreamsFetcher(broker, identity, relock, idle_max_interval=idle_max_interval)


def jobs(queue: str, *jids: str) -> list[str]:
    return [payload("Work", [jid], queue, jid) for jid in jids]


def pending(client: redis.Redis, keys: KeySchema, queue: str) -> dict[str, int]:
    """Consumer → entries pending to it in the stream of ``queue``."""
    stream = f"{keys.prefix}:stream:{queue}"
    if not client.exists(stream):
        return {}
    return {row["name"].decode(): int(row["pending"])
            for row in client.xinfo_consumers(stream, GROUP) if row["pending"]}


def stream_length(client: redis.Redis, keys: KeySchema, queue: str) -> int:
    return int(client.xlen(f"{keys.prefix}:stream:{queue}"))


def jids(raws: list[str]) -> list[str]:
    return [json.loads(raw)["jid"] for raw in raws]


# the package ------------------------------------------------------------------------------
LUA_NAMES = sorted(entry.name.removesuffix(".lua")
                   for entry in (resources.files(PACKAGE) / "lua").iterdir()
                   if entry.name.endswith(".lua"))


@pytest.mark.parametrize("name", LUA_NAMES)
def test_every_script_of_the_plugin_has_a_complete_header(name: str) -> None:
    """Every KEYS[i] and ARGV[i] the body names is declared in the header, as in cogworker's
    own scripts (tests/redis/test_redis_lua.py)."""
    source = script_source(PACKAGE, name)
    lines = source.splitlines()
    end = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("--"))
    header, body = "\n".join(lines[:end]), "\n".join(lines[end:])
    assert "-- luacheck: globals KEYS ARGV redis" in header
    assert re.search(r"^--\s*Returns?\b", header, re.MULTILINE)
    used_keys = {int(n) for n in re.findall(r"KEYS\[(\d+)\]", body)}
    used_args = {int(n) for n in re.findall(r"ARGV\[(\d+)\]", body)}
    declared_args = {int(n) for n in re.findall(r"^--\s*ARGV\[(\d+)\]", header, re.MULTILINE)}
    assert used_keys <= set(range(1, declared_key_count(source) + 1))
    assert used_args <= declared_args


# fetching -----------------------------------------------------------------------------------
def test_the_fetcher_is_a_fetcher_made_by_the_plugin_for_a_redis_broker(
    app: cogworker.App, broker: RedisBackedBroker,
) -> None:
    made = plugin.cogworker_make_fetcher(app, broker)
    assert isinstance(made, StreamsFetcher)
    typed: Fetcher = made  # mypy checks the whole Protocol, isinstance its members
    assert isinstance(typed, Fetcher)
    assert (typed.name, typed.reliable, typed.holds_jobs()) == ("streams", True, True)
    made.close()


def test_a_fetch_delivers_the_oldest_jobs_to_this_consumer_and_leaves_the_rest(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "default", *jobs("default", "j1", "j2", "j3", "j4", "j5"))
    fetcher = fetcher_for(broker)
    works = fetcher.fetch(["default"], 1.0, 3)
    assert [(w.queue, json.loads(w.raw)["jid"]) for w in works] == [
        ("default", "j1"), ("default", "j2"), ("default", "j3")]
    assert jids_on(redis_client, keys.queue("default")) == ["j5", "j4"]
    assert pending(redis_client, keys, "default") == {ME: 3}
    assert jids(fetcher.in_progress()) == ["j3", "j2", "j1"]  # most recently taken first
    assert redis_client.sismember(f"{keys.prefix}:streams", "default")
    fetcher.close()


def test_paused_queues_are_skipped_and_a_fetch_of_only_paused_queues_takes_nothing(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "low", *jobs("low", "l1"))
    push_raw(redis_client, keys, "high", *jobs("high", "h1"))
    broker.queues.pause("high")
    fetcher = fetcher_for(broker)
    assert jids([w.raw for w in fetcher.fetch(["high", "low"], 1.0, 5)]) == ["l1"]
    assert fetcher.fetch(["high"], 0.2, 5) == []
    assert jids_on(redis_client, keys.queue("high")) == ["h1"]
    assert stream_length(redis_client, keys, "high") == 0
    fetcher.close()


def test_a_push_wakes_an_idle_fetch_waiting_on_several_queues(
    app: cogworker.App, broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    app.job(name="Work")(lambda tag: None)
    fetcher = fetcher_for(broker, idle_max_interval=60.0)  # only a wake-up ends the wait
    got: list[UnitOfWork] = []
    waiting = threading.Thread(target=lambda: got.extend(
        fetcher.fetch(["default", "other"], 30.0, 1)))
    waiting.start()
    wait_until(lambda: dict(redis_client.pubsub_numsub(keys.wakeup)).get(
        keys.wakeup.encode(), 0) >= 1, 10, lambda: "the fetch never subscribed to wake-ups")
    app.push({"class": "Work", "args": ["w"], "queue": "other"})
    waiting.join(30)
    assert [json.loads(w.raw)["args"] for w in got] == [["w"]]
    fetcher.close()


def test_a_queue_of_another_type_is_skipped_and_logged_once(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
    caplog: pytest.LogCaptureFixture,
) -> None:
    redis_client.set(keys.queue("broken"), "not a list")
    push_raw(redis_client, keys, "default", *jobs("default", "j1", "j2"))
    # the queues in the order given, so each fetch looks at "broken" before it takes a job
    fetcher = StreamsFetcher(broker, ME, no_lock, idle_max_interval=1.0, rng=KeepOrder())
    assert jids([w.raw for w in fetcher.fetch(["broken", "default"], 1.0, 1)]) == ["j1"]
    assert jids([w.raw for w in fetcher.fetch(["broken", "default"], 1.0, 1)]) == ["j2"]
    assert caplog.text.count("queue broken is skipped") == 1
    fetcher.close()


def test_a_lost_fetch_reply_leaves_jobs_that_in_progress_shows_and_give_back_finds(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    push_raw(redis_client, keys, "default", *jobs("default", "j1"))
    fetcher = fetcher_for(broker)
    run = broker.scripts.run

    def reply_lost(*args: Any, **kwargs: Any) -> Any:
        run(*args, **kwargs)
        raise BrokerUnavailableError("connection lost before the reply")

    monkeypatch.setattr(broker.scripts, "run", reply_lost)
    with pytest.raises(BrokerUnavailableError):
        fetcher.fetch(["default"], 1.0, 1)
    monkeypatch.undo()
    [raw] = fetcher.in_progress()  # the reconcile's view: held, run by nobody
    assert fetcher.give_back(UnitOfWork("default", raw)) is True
    assert jids_on(redis_client, keys.queue("default")) == ["j1"]
    assert pending(redis_client, keys, "default") == {}
    assert stream_length(redis_client, keys, "default") == 0


# settling -----------------------------------------------------------------------------------
def test_acknowledge_drops_the_entries_and_their_counters_once(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "default", *jobs("default", "j1", "j2"))
    redis_client.set(keys.orphanings("j1"), 1)
    fetcher = fetcher_for(broker)
    works = fetcher.fetch(["default"], 1.0, 2)
    fetcher.acknowledge(works)
    fetcher.acknowledge(works)  # again: nothing held, nothing raised
    assert pending(redis_client, keys, "default") == {}
    assert stream_length(redis_client, keys, "default") == 0
    assert not redis_client.exists(keys.orphanings("j1"))


def test_give_back_puts_the_job_on_the_pop_end_once_and_re_takes_its_lock(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "default", *jobs("default", "j1", "j2"))
    fetcher = fetcher_for(broker, relock=lambda raw: LockClaim("acme:j1", "j1", 30.5))
    first = fetcher.fetch(["default"], 1.0, 1)[0]
    assert fetcher.give_back(first) is True
    assert fetcher.give_back(first) is False
    assert jids_on(redis_client, keys.queue("default")) == ["j2", "j1"]  # j1 runs next
    assert redis_client.get(keys.lock("acme:j1")) == b"j1"
    assert 30 <= int(redis_client.ttl(keys.lock("acme:j1"))) <= 31
    assert stream_length(redis_client, keys, "default") == 0


def test_interrupt_and_park_write_first_and_only_for_a_job_still_held(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "default", *jobs("default", "j1", "j2"))
    redis_client.set(keys.orphanings("j1"), 2)
    fetcher = fetcher_for(broker)
    one, two = fetcher.fetch(["default"], 1.0, 2)
    assert fetcher.interrupt(one, "retry", 1234.0, '{"failed":1}') is True
    assert fetcher.interrupt(one, "retry", 1234.0, '{"failed":1}') is False
    assert redis_client.zrange(keys.retry, 0, -1, withscores=True) == [(b'{"failed":1}', 1234.0)]
    assert not redis_client.exists(keys.orphanings("j1"))
    assert fetcher.park_unsettled(two, "dead", 99.0, '{"died":2}') is True
    assert fetcher.park_unsettled(two, "dead", 99.0, '{"died":2}') is False
    assert broker.held.file_unsettled() == [("dead", '{"died":2}')]  # any process files it
    assert pending(redis_client, keys, "default") == {}


def test_the_shutdown_requeue_drops_finished_keeps_pending_failures_requeues_the_rest(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "default", *jobs("default", "j1", "j2", "j3", "j4"))
    redis_client.set(keys.orphanings("j1"), 1)
    fetcher = fetcher_for(broker)
    done, failing, _, _ = fetcher.fetch(["default"], 1.0, 4)
    assert fetcher.requeue_unfinished([done.raw], [failing.raw]) == 2
    assert jids_on(redis_client, keys.queue("default")) == ["j4", "j3"]  # j3 runs first
    assert jids(fetcher.in_progress()) == ["j2"]
    assert not redis_client.exists(keys.orphanings("j1"))
    assert fetcher.requeue_unfinished([], [failing.raw]) == 0


# recovery -----------------------------------------------------------------------------------
def beat(broker: RedisBackedBroker, identity: str) -> None:
    broker.processes.beat(identity, {"identity": identity}, 0, False, ["default"], 30.0,
                          holds_jobs=True)


def test_recovery_requeues_only_the_dead_and_a_late_ack_of_theirs_removes_nothing(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "default", *jobs("default", "a1", "b1", "d1", "d2", "d3"))
    alive, stale, dead = "host:2:alive", "host:3:stale", "host:4:dead"
    beat(broker, alive)
    alive_fetcher = fetcher_for(broker, alive)
    alive_fetcher.fetch(["default"], 1.0, 1)
    stale_fetcher = fetcher_for(broker, stale)
    stale_fetcher.fetch(["default"], 1.0, 1)
    redis_client.hset(keys.last_beat, stale, broker.server_time() - 5)  # presence gone, beat fresh
    dead_fetcher = fetcher_for(broker, dead)
    dead_works = dead_fetcher.fetch(["default"], 1.0, 3)  # never beat: dead at once

    report = fetcher_for(broker).recover_orphans(ME, OPTIONS)
    assert (report.moved, report.recovered, report.failures) == (3, {dead: 3}, [])
    assert jids_on(redis_client, keys.queue("default")) == ["d3", "d2", "d1"]  # d1 first
    assert pending(redis_client, keys, "default") == {alive: 1, stale: 1}
    assert all(redis_client.get(keys.orphanings(j)) == b"1" for j in ("d1", "d2", "d3"))
    consumers = {row["name"].decode() for row in redis_client.xinfo_consumers(
        f"{keys.prefix}:stream:default", GROUP)}
    assert dead not in consumers  # a dead consumer left with nothing is deleted

    dead_fetcher.acknowledge(dead_works)  # the "dead" process was only frozen
    assert jids_on(redis_client, keys.queue("default")) == ["d3", "d2", "d1"]
    assert redis_client.get(keys.orphanings("d1")) == b"1"  # left to the run that superseded


def test_a_job_orphaned_more_than_max_orphanings_times_goes_to_dead(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "default", *jobs("default", "pill"))
    redis_client.set(keys.orphanings("pill"), OPTIONS.max_orphanings)
    fetcher_for(broker, "host:5:dead").fetch(["default"], 1.0, 1)
    report = fetcher_for(broker).recover_orphans(ME, OPTIONS)
    assert (report.moved, report.parked) == (0, 1)
    [record] = report.buried
    dead = json.loads(record)
    assert (dead["jid"], dead["error_class"]) == ("pill", "cogworker.JobOrphanedError")
    assert redis_client.zcard(keys.dead) == 1
    assert redis_client.llen(keys.queue("default")) == 0
    assert redis_client.llen(keys.repeat_orphans) == 0
    assert not redis_client.exists(keys.orphanings("pill"))


def test_recover_process_needs_no_liveness_and_a_beating_process_keeps_its_jobs(
    broker: RedisBackedBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    push_raw(redis_client, keys, "default", *jobs("default", "v1"))
    vouched = "host:6:exited"
    beat(broker, vouched)
    fetcher_for(broker, vouched).fetch(["default"], 1.0, 1)
    rescuer = fetcher_for(broker)
    assert rescuer.recover_orphans(ME, OPTIONS).moved == 0  # its presence says alive
    report = rescuer.recover_process(vouched, OPTIONS)
    assert (report.moved, report.recovered) == (1, {vouched: 1})
    assert jids_on(redis_client, keys.queue("default")) == ["v1"]


# options and other brokers ------------------------------------------------------------------
def test_an_unknown_plugin_option_is_a_start_up_error_naming_it(
    redis_url: str, namespace: str,
) -> None:
    app = cogworker.App(redis_url=redis_url, namespace=namespace,
                        plugin_options={"streams": {"group": "x"}})
    with pytest.raises(ConfigurationError, match=r"plugin_options\.streams\.group"):
        plugin.cogworker_configure(app)
    app.close()


def test_full_redis_still_fetches_and_settles(
    redis_server_factory: RedisServerFactory, namespace: str, keys: KeySchema,
) -> None:
    server = redis_server_factory(appendonly=False)
    client = redis.Redis.from_url(server.url)
    app = cogworker.App(redis_url=server.url, namespace=namespace)
    broker = app.broker
    assert isinstance(broker, RedisAccess)
    push_raw(client, keys, "default", *jobs("default", "f1", "f2", "f3", "f4"))
    fetcher = fetcher_for(broker)
    fetcher.fetch(["default"], 1.0, 1)  # the group exists before Redis is full
    client.set(f"{keys.prefix}:ballast", b"x" * 400_000)
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", max(used - 200_000, 1))
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        client.set(f"{keys.prefix}:one-more", "x")

    first, second, third = fetcher.fetch(["default"], 1.0, 3)
    fetcher.acknowledge([first])
    assert fetcher.give_back(second) is True
    assert fetcher.interrupt(third, "retry", 1.0, '{"x":1}') is True
    assert pending(client, keys, "default") == {ME: 1}
    fetcher.close()
    client.config_set("maxmemory", 0)
    app.close()
    client.close()
