"""The broker contract's own rules: documented methods, the extension accessor, URL schemes.

What each implementation does with the contract is proved by the contract suite, which runs
the same tests on every broker; these tests hold the declarations themselves to account.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol, TypeVar, cast

import pytest
from typing_extensions import get_protocol_members

from cogworker.core.broker import (
    NO_URL,
    Broker,
    BrokerSchemes,
    Extension,
    Fetcher,
    HeldJobStore,
    JobSets,
    LockStore,
    PeriodicStore,
    ProcessRegistry,
    QueueStore,
    RecoveryReport,
    StatsStore,
    Subscription,
    running_lock_name,
    scheme_owners,
    unknown_scheme_error,
    url_scheme,
)
from cogworker.core.errors import ConfigurationError, PluginConflictError

FACETS: tuple[type, ...] = (QueueStore, HeldJobStore, JobSets, ProcessRegistry, LockStore,
                            PeriodicStore, StatsStore)
CONTRACT: tuple[type, ...] = (*FACETS, Broker, Fetcher, Subscription)

T = TypeVar("T")


def documented_members(protocol: type) -> dict[str, str]:
    """Every method and property of ``protocol`` with its docstring ('' when none)."""
    found = {}
    for name in get_protocol_members(protocol):
        member = inspect.getattr_static(protocol, name, None)
        if callable(member) or isinstance(member, property):
            found[name] = inspect.getdoc(member) or ""
    return found


@pytest.mark.parametrize("protocol", CONTRACT, ids=lambda protocol: protocol.__name__)
def test_every_method_says_what_it_does(protocol: type) -> None:
    members = documented_members(protocol)

    assert [name for name, doc in members.items() if len(doc) < 20] == []
    assert len(members) >= 2


@pytest.mark.parametrize("protocol", FACETS, ids=lambda protocol: protocol.__name__)
def test_every_facet_states_its_errors(protocol: type) -> None:
    doc = inspect.getdoc(protocol) or ""

    assert "BrokerUnavailableError" in doc
    assert "BrokerError" in doc
    assert "__cause__" in doc


def test_the_composite_broker_has_every_facet() -> None:
    facet_types = {name: inspect.signature(getattr(Broker, name).fget).return_annotation
                   for name in ("queues", "held", "sets", "processes", "locks", "periodic",
                                "stats")}

    assert facet_types == {"queues": "QueueStore", "held": "HeldJobStore", "sets": "JobSets",
                           "processes": "ProcessRegistry", "locks": "LockStore",
                           "periodic": "PeriodicStore", "stats": "StatsStore"}


# the extension accessor -----------------------------------------------------------------


class Counter(Protocol):
    def add(self, amount: int) -> int: ...


class MemoryCounter:
    def __init__(self) -> None:
        self.total = 0

    def add(self, amount: int) -> int:
        self.total += amount
        return self.total


COUNTER = Extension[Counter]("counter", "a running total")


class Extensible:
    """The accessor as a broker implements it: the keys it supports, each to its facet."""

    def __init__(self, extensions: dict[Extension[Any], object]) -> None:
        self._extensions = extensions

    def extension(self, key: Extension[T]) -> T | None:
        return cast("T | None", self._extensions.get(key))


def test_an_extension_is_reached_through_its_key() -> None:
    broker = Extensible({COUNTER: MemoryCounter()})

    counter = broker.extension(COUNTER)  # typed Counter | None, no getattr probing

    assert counter is not None
    assert counter.add(2) + counter.add(3) == 7


def test_a_key_is_its_own_identity() -> None:
    broker = Extensible({COUNTER: MemoryCounter()})
    lookalike = Extension[Counter]("counter", "a running total")

    assert broker.extension(lookalike) is None
    assert Extensible({}).extension(COUNTER) is None


def test_an_extension_needs_a_name() -> None:
    with pytest.raises(ValueError, match="needs a name"):
        Extension[Counter]("", "nameless")


# URL schemes ----------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "scheme"), [
    ("redis://localhost:6379/0", "redis"),
    ("REDISS://user:secret@host:6380/1", "rediss"),
    ("redis+sentinel://host:26379/mymaster", "redis+sentinel"),
    ("unix:///run/redis.sock?db=2", "unix"),
    ("memory://", "memory"),
    (None, NO_URL),
    ("", NO_URL),
])
def test_the_scheme_of_a_url(url: str | None, scheme: str) -> None:
    assert url_scheme(url) == scheme


@pytest.mark.parametrize("url", ["localhost:6379", "user:secret@host", "://host", "9p://x"])
def test_text_without_a_scheme_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(ValueError, match=r"needs a scheme in front, e\.g\. redis://") as caught:
        url_scheme(url)

    assert "secret" not in str(caught.value)


def test_a_declaration_needs_schemes_that_are_schemes() -> None:
    with pytest.raises(ValueError, match="'redis://' is not a scheme"):
        BrokerSchemes(("redis://",))
    with pytest.raises(ValueError, match="at least one URL scheme, or without_url"):
        BrokerSchemes(())

    assert BrokerSchemes((), without_url=True).without_url


def test_each_scheme_has_one_owner() -> None:
    owners = scheme_owners([
        ("redis", BrokerSchemes(("redis", "rediss", "unix"), without_url=True)),
        ("memory", BrokerSchemes(("memory",))),
    ])

    assert owners == {"redis": "redis", "rediss": "redis", "unix": "redis", NO_URL: "redis",
                      "memory": "memory"}


def test_a_scheme_claimed_twice_names_both_plugins() -> None:
    both = r"'redis' and 'acme' both claim the URL scheme rediss://.*no:redis or --plugin no:acme"
    with pytest.raises(PluginConflictError, match=both):
        scheme_owners([("redis", BrokerSchemes(("redis", "rediss"))),
                       ("acme", BrokerSchemes(("acme", "rediss")))])
    with pytest.raises(PluginConflictError, match="both claim the broker used when no URL"):
        scheme_owners([("redis", BrokerSchemes(("redis",), without_url=True)),
                       ("acme", BrokerSchemes(("acme",), without_url=True))])


def test_an_unknown_scheme_names_the_brokers_and_hides_the_url() -> None:
    owners = {"redis": "redis", "rediss": "redis", NO_URL: "redis", "memory": "memory"}

    error = unknown_scheme_error("redis_url", "amqp://guest:secret@rabbit/", owners)

    assert isinstance(error, ConfigurationError)
    assert error.field == "redis_url"
    assert "amqp://..." in str(error)
    assert "secret" not in str(error)
    assert "memory: memory://; redis: no URL, redis://, rediss://" in str(error)


def test_an_unknown_scheme_names_the_installed_broker_that_owns_it() -> None:
    owners = {"redis": "redis", NO_URL: "redis"}

    owned = unknown_scheme_error("redis_url", "memory://", owners, {"memory": "memory"})
    other = unknown_scheme_error("redis_url", "amqp://h/", owners, {"memory": "memory"})

    assert "belongs to the installed plugin 'memory', which is not active: activate it " \
           "(--plugin memory" in str(owned)
    assert "installed but not active: memory: memory://" in str(other)


def test_an_unknown_scheme_with_no_broker_active_says_so() -> None:
    error = unknown_scheme_error("redis_url", None, {})

    assert "no broker plugin is active" in str(error)


# records --------------------------------------------------------------------------------


def test_the_running_lock_of_a_cron_entry() -> None:
    assert running_lock_name("3f2a") == "periodic:running:3f2a"
    with pytest.raises(ValueError, match="pjid must not be empty"):
        running_lock_name("")


def test_a_recovery_report_starts_empty() -> None:
    report = RecoveryReport()

    assert (report.moved, report.failed, report.parked) == (0, 0, 0)
    assert report.recovered == {} and report.failures == [] and report.filed_dead == []
    assert RecoveryReport().buried is not report.buried  # no list shared between reports
