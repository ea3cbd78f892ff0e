"""The typed facade: failure policies, argument passing, ordering, historic configure."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import pluggy
import pytest

from cogworker.core import hookspecs
from cogworker.core.errors import PluginError
from cogworker.core.hook_dispatch import NOTIFICATION_HOOKS
from cogworker.core.hooks import Hooks
from cogworker.core.markers import PROJECT_NAME, hookimpl

APP: Any = object()
BROKER: Any = object()
WORKER: Any = object()


def make_hooks(**plugins: object) -> Hooks:
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name, plugin in plugins.items():
        pm.register(plugin, name=name)
    return Hooks(pm, trace=False)


class HeartbeatRecorder:
    def __init__(self, label: str, calls: list[str]) -> None:
        self.label = label
        self.calls = calls

    @hookimpl
    def cogworker_heartbeat(self, worker: object) -> None:
        self.calls.append(self.label)


class FailingHeartbeat:
    @hookimpl
    def cogworker_heartbeat(self, worker: object) -> None:
        raise RuntimeError("store down")


class FirstHeartbeat(HeartbeatRecorder):
    @hookimpl(tryfirst=True)
    def cogworker_heartbeat(self, worker: object) -> None:
        self.calls.append(self.label)


def test_one_failing_notification_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []
    hooks = make_hooks(
        early=HeartbeatRecorder("early", calls),
        flaky=FailingHeartbeat(),
        late=HeartbeatRecorder("late", calls),
    )

    with caplog.at_level(logging.ERROR, logger="cogworker.core.hooks"):
        hooks.heartbeat(WORKER)

    assert sorted(calls) == ["early", "late"]
    [record] = caplog.records
    assert "'flaky'" in record.getMessage()
    assert "cogworker_heartbeat" in record.getMessage()
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)


def test_notifications_run_in_pluggy_call_order() -> None:
    calls: list[str] = []
    hooks = make_hooks(
        first=FirstHeartbeat("first", calls),
        older=HeartbeatRecorder("older", calls),
        newer=HeartbeatRecorder("newer", calls),
    )

    hooks.heartbeat(WORKER)

    assert calls == ["first", "newer", "older"]  # tryfirst, then last registered first


def test_notification_impls_get_only_the_arguments_they_declare() -> None:
    received: dict[str, tuple[object, ...]] = {}

    class JobOnly:
        @hookimpl
        def cogworker_job_died(self, job: object) -> None:
            received["job_only"] = (job,)

    class ReorderedSubset:
        @hookimpl
        def cogworker_job_retried(self, delay: float, app: object) -> None:
            received["reordered"] = (delay, app)

    class WithDefault:
        @hookimpl
        def cogworker_job_retried(self, job: object, exception: object = None) -> None:
            received["with_default"] = (job, exception)

    hooks = make_hooks(a=JobOnly(), b=ReorderedSubset(), c=WithDefault())
    job = {"jid": "abc"}
    error = ValueError("x")

    hooks.job_died(APP, job, error)
    hooks.job_retried(APP, job, error, 7.5)

    assert received == {
        "job_only": (job,),
        "reordered": (7.5, APP),
        "with_default": (job, error),
    }


def test_decision_hooks_propagate() -> None:
    class BrokenLock:
        @hookimpl
        def cogworker_acquire_unique_lock(self, app: object, job: object) -> bool:
            raise ConnectionError("lock store down")

    hooks = make_hooks(broken=BrokenLock())

    with pytest.raises(ConnectionError, match="lock store down"):
        hooks.acquire_unique_lock(APP, {"jid": "1"})


def test_firstresult_decision_returns_the_first_non_none() -> None:
    class NotMine:
        @hookimpl(tryfirst=True)
        def cogworker_acquire_unique_lock(self, job: object) -> None:
            return None

    class Duplicate:
        @hookimpl
        def cogworker_acquire_unique_lock(self, job: object) -> bool:
            return False

    hooks = make_hooks(not_mine=NotMine(), duplicate=Duplicate())

    assert hooks.acquire_unique_lock(APP, {"jid": "1"}) is False
    assert make_hooks().acquire_unique_lock(APP, {"jid": "1"}) is None


def test_make_fetcher_without_a_provider_says_how_to_activate_one() -> None:
    with pytest.raises(PluginError, match="--plugin basic or --plugin reliable"):
        make_hooks().make_fetcher(APP, BROKER)


def test_middleware_keeps_call_order_and_drops_none() -> None:
    def outer(ctx: object, call_next: Callable[[], object]) -> object:
        return call_next()

    def inner(ctx: object, call_next: Callable[[], object]) -> object:
        return call_next()

    class Outer:
        @hookimpl(tryfirst=True)
        def cogworker_client_middleware(self) -> object:
            return outer

    class Nothing:
        @hookimpl
        def cogworker_client_middleware(self, app: object) -> None:
            return None

    class Inner:
        @hookimpl(trylast=True)
        def cogworker_client_middleware(self, app: object) -> object:
            return inner

    hooks = make_hooks(inner=Inner(), nothing=Nothing(), outer=Outer())

    assert hooks.client_middleware(APP) == [outer, inner]
    assert hooks.server_middleware(APP) == []


def test_configure_is_historic() -> None:
    seen: list[tuple[str, object]] = []

    class Configurable:
        def __init__(self, label: str) -> None:
            self.label = label

        @hookimpl
        def cogworker_configure(self, app: object) -> None:
            seen.append((self.label, app))

    hooks = make_hooks(early=Configurable("early"))
    hooks.configure(APP)
    hooks.plugin_manager.register(Configurable("late"), name="late")

    assert seen == [("early", APP), ("late", APP)]


def test_wrapper_on_a_notification_hook_is_rejected() -> None:
    class Wrapping:
        @hookimpl(wrapper=True)
        def cogworker_shutdown(self, worker: object) -> object:
            return (yield)

    with pytest.raises(PluginError, match=r"'wrapping'.*cogworker_shutdown"):
        make_hooks(wrapping=Wrapping())


def test_every_hookspec_has_a_facade_method() -> None:
    # cogworker_addhooks is armed by load_plugins before registration; no method is needed.
    for hook_name in set(hookspecs.ALL_HOOKS) - {"cogworker_addhooks"}:
        assert callable(getattr(Hooks, hook_name.removeprefix("cogworker_"), None)), hook_name


def test_isolated_hooks_are_those_whose_docstring_says_so() -> None:
    isolated = {
        name
        for name in hookspecs.ALL_HOOKS
        if "Failure policy: isolated" in (inspect.getdoc(getattr(hookspecs, name)) or "")
    }

    assert isolated == NOTIFICATION_HOOKS


class LockVote:
    def __init__(self, label: str, vote: bool | None, calls: list[str]) -> None:
        self.label, self.vote, self.calls = label, vote, calls

    @hookimpl
    def cogworker_acquire_unique_lock(self, job: object) -> bool | None:
        self.calls.append(self.label)
        return self.vote


class FirstLockVote(LockVote):
    @hookimpl(tryfirst=True)
    def cogworker_acquire_unique_lock(self, job: object) -> bool | None:
        self.calls.append(self.label)
        return self.vote


def test_first_result_hooks_stop_at_the_first_answer_in_pluggy_order() -> None:
    calls: list[str] = []
    hooks = make_hooks(
        older=LockVote("older", True, calls),
        newer=LockVote("newer", None, calls),
        first=FirstLockVote("first", None, calls),
    )
    assert hooks.acquire_unique_lock(APP, {"jid": "1"}) is True
    assert calls == ["first", "newer", "older"]
    calls.clear()
    hooks.plugin_manager.register(LockVote("latest", False, calls), name="latest")
    assert hooks.acquire_unique_lock(APP, {"jid": "1"}) is False  # a late plugin counts
    assert calls == ["first", "latest"]


class LockWrapper:
    """A wrapper on the lock hook: records each answer it wraps, and inverts it if asked."""

    def __init__(self, seen: list[object], *, invert: bool = False) -> None:
        self.seen = seen
        self.invert = invert

    @hookimpl(wrapper=True)
    def cogworker_acquire_unique_lock(self, app: object, job: object) -> Any:
        result = yield
        self.seen.append(result)
        return not result if self.invert else result


def test_a_wrapper_on_a_first_result_hook_wraps_the_call() -> None:
    seen: list[object] = []
    calls: list[str] = []
    hooks = make_hooks(vote=LockVote("vote", True, calls),
                       wrapper=LockWrapper(seen, invert=True))
    assert hooks.acquire_unique_lock(APP, {"jid": "1"}) is False
    assert seen == [True]


def test_no_first_result_answer_is_none() -> None:
    calls: list[str] = []
    hooks = make_hooks(silent=LockVote("silent", None, calls))
    assert hooks.acquire_unique_lock(APP, {"jid": "1"}) is None
    assert calls == ["silent"]


def test_a_wrapper_registered_after_the_first_call_wraps_the_next_one() -> None:
    """The call plans are cached per hook; a late registration (the supervisor's child
    plugin is one) is seen at the next call, a late unregistration too."""
    seen: list[object] = []
    calls: list[str] = []
    hooks = make_hooks(vote=LockVote("vote", True, calls))
    assert hooks.acquire_unique_lock(APP, {"jid": "1"}) is True
    hooks.plugin_manager.register(LockWrapper(seen), name="wrapper")
    assert hooks.acquire_unique_lock(APP, {"jid": "1"}) is True
    assert seen == [True]
    hooks.plugin_manager.unregister(name="vote")
    assert hooks.acquire_unique_lock(APP, {"jid": "1"}) is None
    assert calls == ["vote", "vote"]


def test_notifications_see_plugins_registered_and_unregistered_after_the_first_call(
) -> None:
    calls: list[str] = []
    hooks = make_hooks(a=HeartbeatRecorder("a", calls))
    hooks.heartbeat(WORKER)
    hooks.plugin_manager.register(HeartbeatRecorder("b", calls), name="b")
    hooks.heartbeat(WORKER)
    hooks.plugin_manager.unregister(name="a")
    hooks.heartbeat(WORKER)
    assert calls == ["a", "b", "a", "b"]


class NoArguments:
    def __init__(self, given: list[tuple[object, ...]]) -> None:
        self.given = given

    @hookimpl
    def cogworker_acquire_unique_lock(self) -> None:
        self.given.append(())


class JobOnly(NoArguments):
    @hookimpl
    def cogworker_acquire_unique_lock(self, job: object) -> None:  # type: ignore[override]
        self.given.append((job,))


class JobThenApp(NoArguments):
    @hookimpl
    def cogworker_acquire_unique_lock(self, job: object,  # type: ignore[override]
                                      app: object) -> None:
        self.given.append((job, app))


@pytest.mark.parametrize(("plugin_class", "expected"), [
    (NoArguments, ()), (JobOnly, ("job",)), (JobThenApp, ("job", "app"))])
def test_a_first_result_implementation_gets_the_arguments_it_declares(
        plugin_class: type[NoArguments], expected: tuple[str, ...]) -> None:
    given: list[tuple[object, ...]] = []
    hooks = make_hooks(plugin=plugin_class(given))
    job = {"jid": "1"}
    assert hooks.acquire_unique_lock(APP, job) is None
    assert hooks.acquire_unique_lock(APP, job) is None  # the cached plan picks the same
    values = {"app": APP, "job": job}
    assert given == [tuple(values[name] for name in expected)] * 2


class KeyedLockPlugin:
    """Lock hooks that promise to do nothing for a job without a ``tenant``."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    @hookimpl(for_jobs_with=("tenant",))
    def cogworker_acquire_unique_lock(self, job: dict[str, object]) -> bool:
        self.calls.append(f"acquire {job['jid']}")
        return True

    @hookimpl(for_jobs_with=("tenant",))
    def cogworker_release_unique_lock(self, job: dict[str, object]) -> None:
        self.calls.append(f"release {job['jid']}")


class EveryJobRelease:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    @hookimpl
    def cogworker_release_unique_lock(self, job: dict[str, object]) -> None:
        self.calls.append(f"every {job['jid']}")


def test_an_implementation_for_jobs_with_a_key_is_skipped_for_other_jobs() -> None:
    calls: list[str] = []
    hooks = make_hooks(keyed=KeyedLockPlugin(calls), every=EveryJobRelease(calls))
    assert hooks.acquire_unique_lock(APP, {"jid": "1"}) is None
    hooks.release_unique_lock(APP, {"jid": "1"}, "success")
    assert calls == ["every 1"]
    calls.clear()
    assert hooks.acquire_unique_lock(APP, {"jid": "2", "tenant": "t"}) is True
    hooks.release_unique_lock(APP, {"jid": "2", "tenant": "t"}, "success")
    assert sorted(calls) == ["acquire 2", "every 2", "release 2"]


def test_for_jobs_with_is_recorded_on_the_function_and_keeps_it_an_implementation() -> None:
    impl = KeyedLockPlugin.cogworker_acquire_unique_lock
    assert getattr(impl, "cogworker_payload_keys", None) == frozenset({"tenant"})
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(KeyedLockPlugin([]), name="keyed")
    assert [i.plugin_name for i in pm.hook.cogworker_acquire_unique_lock.get_hookimpls()] == [
        "keyed"]
