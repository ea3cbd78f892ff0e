"""What only the memory broker promises: its clock, its plugin, its URLs.

Everything the broker contract promises is proved for it by ``tests/contract``.
"""

from __future__ import annotations

import pytest

from cogworker.core.broker import Broker, BrokerSchemes, WorkRecord
from cogworker.core.errors import ConfigurationError
from cogworker.core.settings import Settings
from cogworker.testing.memory_broker import MemoryBroker
from cogworker.testing.memory_broker import plugin as memory_plugin


class ManualClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_every_ttl_reads_the_injected_clock() -> None:
    clock = ManualClock()
    broker = MemoryBroker(clock)
    broker.locks.acquire("unique:a", "jid-1", 10)
    broker.processes.beat("p:1", {}, 0, False, [], 10, True)
    broker.processes.replace_work("p:1", {"t": WorkRecord("q", {}, 1.0)}, 10)

    clock.now += 9.5  # frozen in between: nothing expires without the clock moving
    alive = (broker.locks.owner("unique:a"), broker.processes.get("p:1") is not None,
             len(broker.processes.work("p:1")))
    clock.now += 1

    assert alive == ("jid-1", True, 1)
    assert broker.locks.owner("unique:a") is None
    assert broker.processes.get("p:1") is None
    assert broker.processes.work("p:1") == []
    assert broker.server_time() == clock.now


def test_liveness_and_dead_caps_read_the_injected_clock() -> None:
    clock = ManualClock()
    broker = MemoryBroker(clock, dead_timeout=100.0)
    broker.processes.beat("p:1", {}, 0, False, [], 5, True)
    broker.sets.file("dead", clock.now, "old")

    clock.now += 50
    assert broker.processes.is_dead("p:1", 60.0) is False  # presence gone, beat recent
    clock.now += 60
    broker.sets.file("dead", clock.now, "new")

    assert broker.processes.is_dead("p:1", 60.0) is True
    assert [entry.raw for entry in broker.sets.page("dead", 0, 10)] == ["new"]


def test_an_orphan_counter_lives_seven_days() -> None:
    from cogworker.core.broker import ORPHAN_COUNTER_TTL, RecoveryOptions

    clock = ManualClock()
    broker = MemoryBroker(clock)
    once = RecoveryOptions(threshold=60.0, max_orphanings=1)
    raw = '{"class":"W","args":[],"queue":"q","jid":"j1"}'
    for advance, parked in ((0, 0), (ORPHAN_COUNTER_TTL - 1, 1), (ORPHAN_COUNTER_TTL + 1, 0)):
        clock.now += advance
        broker.queues.store([("q", raw)], [])
        broker.held.claim("p:1", ["q"], 1)
        assert broker.held.recover_process("p:1", once).parked == parked
        broker.queues.clear("q")
        broker.held.bury_repeat_orphans(clock.now, 1)


def test_it_satisfies_the_broker_contract() -> None:
    broker: Broker = MemoryBroker()  # mypy checks the structure

    assert (broker.name, broker.describe(), broker.server_version()) == ("memory", "memory://",
                                                                          None)
    assert broker.held.supported() is None
    assert repr(broker) == "<MemoryBroker memory://>"


@pytest.mark.parametrize("caps", [{"dead_max_jobs": 0}, {"dead_timeout": 0.0}])
def test_dead_caps_must_be_positive(caps: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="dead set's caps"):
        MemoryBroker(**caps)  # type: ignore[arg-type]


def test_clear_locks_forgets_every_lock() -> None:
    broker = MemoryBroker()
    broker.locks.acquire("unique:a", "o", 60)

    broker.clear_locks()

    assert broker.locks.owner("unique:a") is None


def test_the_plugin_owns_the_memory_scheme() -> None:
    assert memory_plugin.cogworker_broker_schemes() == BrokerSchemes(("memory",))


def test_memory_url_without_a_name_is_a_broker_of_ones_own() -> None:
    settings = Settings(dead_max_jobs=7)
    first = memory_plugin.broker_for_url("memory://", settings)

    assert first is not memory_plugin.broker_for_url("memory://", settings)
    assert first.state.dead_max_jobs == 7


def test_a_named_memory_url_is_shared_within_a_namespace() -> None:
    here, there = Settings(namespace="ns-a"), Settings(namespace="ns-b")
    shared = memory_plugin.broker_for_url("memory://shared-test", here)

    assert memory_plugin.broker_for_url("memory://shared-test", here) is shared
    assert memory_plugin.broker_for_url("memory://shared-test", there) is not shared
    assert shared.describe() == "memory://shared-test"


@pytest.mark.parametrize("url", ["memory://a/b", "memory://x?db=1", "redis://localhost"])
def test_a_url_that_is_no_memory_name_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="memory://<name>"):
        memory_plugin.broker_for_url(url, Settings())


def test_the_plugin_answers_only_for_its_scheme() -> None:
    assert memory_plugin.cogworker_make_broker(Settings()) is None
    assert memory_plugin.cogworker_make_broker(
        Settings(redis_url="redis://localhost:6379/0")) is None


def test_an_app_with_the_memory_plugin_takes_a_memory_url() -> None:
    import cogworker

    app = cogworker.App(redis_url="memory://", plugins=["memory"])

    @app.job
    def hello(x: int) -> int:
        return x

    hello.perform_async(1)
    assert (app.broker.name, app.broker.queues.size("default")) == ("memory", 1)


def test_a_memory_url_without_the_plugin_says_to_activate_it() -> None:
    import cogworker

    with pytest.raises(ConfigurationError, match=r"installed plugin 'memory', which is not "
                                                 r"active: activate it \(--plugin memory"):
        _ = cogworker.App(redis_url="memory://").hooks
