"""Every hookspec's ``Example::`` is real code: it compiles, registers against the specs
(pluggy checks each implementation's argument names), and the examples that need no
outside service run here against a recording host and see their effect."""

from __future__ import annotations

import inspect
import logging
import textwrap
from types import SimpleNamespace
from typing import Any

import pluggy
import pytest

import cogworker
from cogworker.core import hookspecs
from cogworker.core.markers import PROJECT_NAME


def example_of(hook: str) -> str:
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
    _before, marker, example = doc.partition("Example::")
    assert marker, f"{hook} has no Example:: block"
    return textwrap.dedent(example).strip("\n")


def run_example(hook: str) -> Any:
    """The example's implementation of ``hook``, defined in a fresh namespace."""
    namespace: dict[str, Any] = {"cogworker": cogworker}
    exec(compile(example_of(hook), f"<example of {hook}>", "exec"), namespace)
    return namespace[hook]


class RecordingLocks:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def retake(self, name: str, owner: str, ttl: float) -> bool:
        self.calls.append(("retake", name, owner, str(ttl)))
        return True

    def extend(self, name: str, owner: str, ttl: float) -> bool:
        self.calls.append(("extend", name, owner, str(ttl)))
        return True

    def release(self, name: str, owner: str) -> bool:
        self.calls.append(("release", name, owner))
        return True


def host() -> SimpleNamespace:
    return SimpleNamespace(broker=SimpleNamespace(locks=RecordingLocks()), extras={},
                           logger=lambda name: logging.getLogger(f"cogworker.plugin.{name}"))


@pytest.mark.parametrize("hook", hookspecs.ALL_HOOKS)
def test_the_example_registers_against_its_spec(hook: str) -> None:
    assert "    ...\n" not in example_of(hook) + "\n", "a placeholder, not an example"
    plugin = SimpleNamespace(**{hook: run_example(hook)})
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(plugin, name="example")
    pm.check_pending()  # an implementation without a spec (a misspelt name) fails here

    assert [impl.plugin_name for impl in getattr(pm.hook, hook).get_hookimpls()] == ["example"]


@pytest.mark.parametrize(("hook", "method", "ttl"), [
    ("cogworker_retake_periodic_lock", "retake", "60.0"),
    ("cogworker_touch_periodic_lock", "extend", "3660.0"),  # a 60 s wait and its margin
])
def test_the_cron_lock_examples_keep_their_own_lock_only(hook: str, method: str,
                                                         ttl: str) -> None:
    app = host()
    implementation = run_example(hook)

    implementation(app, {"jid": "j1", "acme_cron": "nightly"}, 60.0)
    implementation(app, {"jid": "j2", "periodic_pjid": "theirs"}, 60.0)  # not its job

    assert app.broker.locks.calls == [(method, "acme:cron:nightly", "j1", ttl)]


def test_the_touch_example_chooses_the_running_ttl_itself() -> None:
    app = host()

    run_example("cogworker_touch_periodic_lock")(app, {"jid": "j1", "acme_cron": "n"}, None)

    assert app.broker.locks.calls == [("extend", "acme:cron:n", "j1", "600.0")]


def test_the_release_example_releases_its_own_lock_only() -> None:
    app = host()
    implementation = run_example("cogworker_release_periodic_lock")

    implementation(app, {"jid": "j1", "acme_cron": "nightly"})
    implementation(app, {"jid": "j2"})

    assert app.broker.locks.calls == [("release", "acme:cron:nightly", "j1")]


def test_the_job_event_examples_log_through_the_plugin_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="cogworker.plugin.acme")
    app = host()

    run_example("cogworker_job_retried")(app, {"class": "Mail", "jid": "j1"},
                                         ValueError("smtp down"), 30.0)
    run_example("cogworker_orphans_recovered")(app, "host:1:abc", 3)

    assert [r.getMessage() for r in caplog.records] == [
        "Mail j1 retries in 30s: smtp down",
        "3 job(s) of dead process host:1:abc requeued",
    ]


def test_the_lifecycle_examples_see_the_running_jobs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cogworker.plugin.acme")
    app = host()
    worker = SimpleNamespace(identity="host:1:abc", app=app,
                             performing_jobs=lambda: [{"jid": "j1"}, {"jid": "j2"}])

    run_example("cogworker_heartbeat")(worker)
    run_example("cogworker_shutdown")(worker)

    assert app.extras == {"acme": {"busy": 2}}
    assert [r.getMessage() for r in caplog.records] == [
        "worker host:1:abc stopping, 2 job(s) still running"]
