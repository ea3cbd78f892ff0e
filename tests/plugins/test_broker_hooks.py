"""The broker hooks through the facade: who owns which scheme, who builds the broker, and
which lock a requeue re-takes. Each plugin here is written like the hookspec's example."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pluggy
import pytest

from cogworker.core import hookspecs
from cogworker.core.broker import NO_URL, BrokerSchemes, LockClaim, url_scheme
from cogworker.core.errors import PluginConflictError
from cogworker.core.hooks import Hooks
from cogworker.core.markers import PROJECT_NAME, hookimpl
from cogworker.core.payload import Payload
from cogworker.core.settings import Settings

APP: Any = object()
PROJECT = Path("/srv/project")


def make_hooks(**plugins: object) -> Hooks:
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name, plugin in plugins.items():
        pm.register(plugin, name=name)
    return Hooks(pm, trace=False)


class FakeBroker:
    """Stands in for a broker: the facade passes on whatever the plugin built."""

    def __init__(self, url: str | None, namespace: str) -> None:
        self.url = url
        self.namespace = namespace


class SchemeBroker:
    """A broker plugin owning ``schemes``; it records every time it is asked."""

    def __init__(self, *schemes: str, without_url: bool = False) -> None:
        self.schemes = schemes
        self.without_url = without_url
        self.asked: list[tuple[str | None, Path, bool]] = []

    @hookimpl
    def cogworker_broker_schemes(self) -> BrokerSchemes:
        return BrokerSchemes(self.schemes, without_url=self.without_url)

    @hookimpl
    def cogworker_make_broker(self, settings: Settings, project_dir: Path,
                              may_start_server: bool) -> FakeBroker | None:
        self.asked.append((settings.redis_url, project_dir, may_start_server))
        scheme = url_scheme(settings.redis_url)
        if scheme not in self.schemes and not (scheme == NO_URL and self.without_url):
            return None
        return FakeBroker(settings.redis_url, settings.namespace)


class SettingsOnlyBroker:
    """Takes only the argument it needs, as the hookspec's example does."""

    @hookimpl
    def cogworker_make_broker(self, settings: Settings) -> FakeBroker | None:
        if url_scheme(settings.redis_url) != "rediss":
            return None
        return FakeBroker(settings.redis_url, "settings-only")


def test_the_plugin_owning_the_scheme_builds_the_broker() -> None:
    redis_like = SchemeBroker("redis", "rediss", without_url=True)
    acme = SchemeBroker("acme")
    hooks = make_hooks(redis=redis_like, acme=acme)

    broker: object = hooks.make_broker(
        Settings(redis_url="redis://localhost:6379/3", namespace="ns"), PROJECT, False)

    assert isinstance(broker, FakeBroker)
    assert (broker.url, broker.namespace) == ("redis://localhost:6379/3", "ns")
    assert redis_like.asked == [("redis://localhost:6379/3", PROJECT, False)]


def test_a_plugin_that_does_not_own_the_scheme_passes_to_the_next() -> None:
    acme, redis_like = SchemeBroker("acme"), SchemeBroker("redis", without_url=True)
    hooks = make_hooks(redis=redis_like, acme=acme)  # acme registered last: asked first

    broker: object = hooks.make_broker(Settings(), PROJECT, True)

    assert isinstance(broker, FakeBroker) and broker.url is None  # no URL: the default one
    assert acme.asked == [(None, PROJECT, True)]
    assert len(redis_like.asked) == 1


def test_no_owner_answers_none() -> None:
    hooks = make_hooks(acme=SchemeBroker("acme"))

    assert hooks.make_broker(Settings(redis_url="redis://h:1/0"), PROJECT, True) is None
    assert make_hooks().make_broker(Settings(), PROJECT, True) is None


def test_an_implementation_may_take_only_the_settings() -> None:
    hooks = make_hooks(tls=SettingsOnlyBroker())

    broker: object = hooks.make_broker(Settings(redis_url="rediss://h:6380/0"), PROJECT, True)

    assert isinstance(broker, FakeBroker) and broker.namespace == "settings-only"


def test_the_schemes_of_every_active_broker_plugin() -> None:
    hooks = make_hooks(redis=SchemeBroker("redis", "unix", without_url=True),
                       memory=SchemeBroker("memory"), other=SettingsOnlyBroker())

    assert hooks.broker_schemes() == {"redis": "redis", "unix": "redis", NO_URL: "redis",
                                      "memory": "memory"}


def test_two_plugins_claiming_a_scheme_are_an_error_naming_both() -> None:
    hooks = make_hooks(redis=SchemeBroker("redis", "rediss"), acme=SchemeBroker("rediss"))

    with pytest.raises(PluginConflictError, match="'acme' and 'redis' both claim the URL scheme rediss://"):
        hooks.broker_schemes()


class ExclusiveLock:
    """The hookspec's example: re-take an ``acme:`` lock for jobs that carry one."""

    @hookimpl
    def cogworker_requeue_lock(self, app: object, job: Payload) -> LockClaim | None:
        if not job.get("acme_exclusive"):
            return None
        return LockClaim(f"acme:{job['acme_exclusive']}", job["jid"], ttl=3600)


class EverythingLock:
    @hookimpl(tryfirst=True)
    def cogworker_requeue_lock(self, job: Payload) -> LockClaim | None:
        return LockClaim("all", str(job["jid"]), ttl=1) if job.get("everything") else None


def test_the_requeue_lock_comes_from_the_plugin_that_names_one() -> None:
    hooks = make_hooks(exclusive=ExclusiveLock(), everything=EverythingLock())

    claim = hooks.requeue_lock(APP, {"jid": "j1", "acme_exclusive": "report"})
    first = hooks.requeue_lock(APP, {"jid": "j2", "acme_exclusive": "x", "everything": True})

    assert claim == LockClaim("acme:report", "j1", 3600)
    assert first == LockClaim("all", "j2", 1)  # tryfirst answered first
    assert hooks.requeue_lock(APP, {"jid": "j3"}) is None
    assert make_hooks().requeue_lock(APP, {"jid": "j4", "acme_exclusive": "x"}) is None
