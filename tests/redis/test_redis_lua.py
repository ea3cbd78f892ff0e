"""The Lua files of cogworker.redis: headers match the calls, and NOSCRIPT is survived."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from importlib import resources
from typing import Any

import pytest
import redis

from cogworker.core.broker.batches import SettleItem
from cogworker.core.errors import BrokerError
from cogworker.core.payload import dumps, new_jid
from cogworker.redis.batch_store import RedisBatchStore
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.scripts import (
    NOSCRIPT_ROUNDS,
    Scripts,
    declared_key_count,
    script_source,
)
from helpers.redis_servers import RedisServerFactory

PACKAGE = "cogworker.redis"
LUA_NAMES = sorted(
    entry.name.removesuffix(".lua")
    for entry in (resources.files(PACKAGE) / "lua").iterdir()
    if entry.name.endswith(".lua")
)
BROKER_SCRIPTS = ["bury_entry", "claim_and_requeue", "delete_if_owned", "expire_if_owned",
                  "remove_process", "retake_lock"]


@pytest.fixture
def broker(redis_url: str, keys: KeySchema, redis_client: redis.Redis) -> Iterator[RedisBroker]:
    broker = RedisBroker(make_client(redis_url, max_connections=2), keys)
    yield broker
    broker.close()


def header(source: str) -> str:
    lines = source.splitlines()
    end = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("--"))
    return "\n".join(lines[:end])


@pytest.mark.parametrize("name", LUA_NAMES)
def test_every_script_has_a_complete_header(name: str) -> None:
    """Every KEYS[i] and ARGV[i] the body uses is declared in the header."""
    source = script_source(PACKAGE, name)
    text = header(source)
    assert "-- luacheck: globals KEYS ARGV redis" in text
    assert re.search(r"^--\s*Returns?\b", text, re.MULTILINE | re.IGNORECASE)
    used_keys = {int(n) for n in re.findall(r"KEYS\[(\d+)\]", source.removeprefix(text))}
    used_args = {int(n) for n in re.findall(r"ARGV\[(\d+)\]", source.removeprefix(text))}
    declared_args = {int(n) for n in re.findall(r"^--\s*ARGV\[(\d+)\]", text, re.MULTILINE)}
    assert used_keys <= set(range(1, declared_key_count(source) + 1))
    assert used_args <= declared_args


def exercise_every_script(broker: RedisBroker, keys: KeySchema, client: redis.Redis) -> None:
    now = time.time()
    good = dumps({"class": "Work", "args": [], "queue": "default", "jid": new_jid()})
    client.zadd(keys.schedule, {good: now - 1, "garbage": now - 1})
    broker.sets.graduate("schedule", now, 50)  # claim_and_requeue + bury_entry
    broker.locks.acquire("unique:d", "jid", 10)
    broker.locks.extend("unique:d", "jid", 10)
    broker.locks.retake("unique:d", "jid", 10)
    broker.locks.release("unique:d", "jid")
    broker.processes.remove("host:1:abc")


def test_broker_passes_as_many_keys_as_each_header_declares(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passed: dict[str, set[int]] = {}
    original = broker.scripts.run

    def spy(package: str, name: str, keys: Sequence[Any], args: Sequence[Any] = (),
            client: Any = None) -> Any:
        assert package == PACKAGE
        passed.setdefault(name, set()).add(len(keys))
        return original(package, name, keys, args, client)

    monkeypatch.setattr(broker.scripts, "run", spy)
    exercise_every_script(broker, keys, redis_client)
    assert sorted(passed) == BROKER_SCRIPTS
    for name, counts in passed.items():
        assert counts == {declared_key_count(script_source(PACKAGE, name))}, name


def test_scripts_are_reloaded_after_script_flush(
    redis_server_factory: RedisServerFactory, keys: KeySchema
) -> None:
    server = redis_server_factory(appendonly=False)  # private: SCRIPT FLUSH hits only us
    broker = RedisBroker(make_client(server.url, max_connections=2), keys)
    lock = "unique:digest"
    broker.locks.acquire(lock, "jid", 10)
    assert broker.locks.extend(lock, "jid", 20) is True
    broker.client.script_flush()
    assert broker.client.script_exists(broker.scripts.get(PACKAGE, "expire_if_owned").sha) \
        == [False]
    assert broker.locks.extend(lock, "jid", 30) is True
    assert broker.locks.release(lock, "jid") is True
    broker.close()


class FlushingClient(redis.Redis):
    """A client whose next ``flushes_left`` SCRIPT LOADs are each followed by a SCRIPT
    FLUSH: redis-py's one retry after NOSCRIPT then meets NOSCRIPT again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.flushes_left = 0
        self.loads = 0

    def script_load(self, script: Any) -> Any:
        sha = super().script_load(script)
        self.loads += 1
        if self.flushes_left > 0:
            self.flushes_left -= 1
            self.script_flush()
        return sha


@pytest.fixture
def flushing(redis_server_factory: RedisServerFactory) -> Iterator[FlushingClient]:
    server = redis_server_factory(appendonly=False)  # private: SCRIPT FLUSH hits only us
    client = FlushingClient.from_url(server.url)
    assert isinstance(client, FlushingClient)
    yield client
    client.close()


def test_a_script_flushed_again_between_its_load_and_its_call_is_loaded_once_more(
    flushing: FlushingClient,
) -> None:
    flushing.flushes_left = 1  # the load after the first NOSCRIPT is flushed at once
    assert Scripts(flushing).run(PACKAGE, "delete_if_owned", ["k"], ["v"]) == 0
    assert flushing.loads == 2  # redis-py's load, flushed; then the next round's


def test_a_script_that_never_stays_loaded_fails_after_a_few_rounds(
    flushing: FlushingClient,
) -> None:
    flushing.flushes_left = 1_000  # every load is flushed: not a race, a broken server
    with pytest.raises(BrokerError, match="NoScriptError"):
        Scripts(flushing).run(PACKAGE, "delete_if_owned", ["k"], ["v"])
    assert flushing.loads == NOSCRIPT_ROUNDS


def _batch_of_two(client: redis.Redis) -> tuple[RedisBatchStore, str]:
    store = RedisBatchStore(client, KeySchema(new_jid()), Scripts(client))
    bid = new_jid()
    store.register(bid, ["a", "b"], time.time(), 60.0)
    return store, bid


def test_a_settle_pipeline_flushed_again_after_its_reload_is_loaded_once_more(
    flushing: FlushingClient,
) -> None:
    store, bid = _batch_of_two(flushing)
    flushing.script_flush()  # a restarted Redis: the pipeline meets NOSCRIPT
    loads = flushing.loads
    flushing.flushes_left = 1  # and the reload is flushed at once
    items = [SettleItem(bid, "a", "success"), SettleItem(bid, "b", "success")]
    updates = store.settle_many(items, time.time(), 60.0)
    assert [update.bid for update in updates] == [bid, bid]
    assert flushing.loads - loads == 2
    assert store.members(bid, "succeeded", 0, 10) == (["a", "b"], 2)


def test_a_settle_pipeline_that_never_stays_loaded_fails_after_a_few_rounds(
    flushing: FlushingClient,
) -> None:
    store, bid = _batch_of_two(flushing)
    flushing.script_flush()
    loads = flushing.loads
    flushing.flushes_left = 1_000
    with pytest.raises(BrokerError, match="NoScriptError"):
        store.settle_many([SettleItem(bid, "a", "success")], time.time(), 60.0)
    assert flushing.loads - loads == NOSCRIPT_ROUNDS - 1
    assert store.members(bid, "succeeded", 0, 10) == ([], 0)
