"""The builtin has no privileges: a third-party plugin replaces its decisions, or it is off."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import cogworker
from cogworker.redis.keys import KeySchema
from unique.unique_helpers import lock_keys, queued

# A different rule: a job is a duplicate when its first argument is "blocked", whatever
# else; the builtin's lock is never consulted.
ACME_UNIQUE = """
    from cogworker.core.markers import hookimpl

    decisions = []


    @hookimpl(tryfirst=True)
    def cogworker_acquire_unique_lock(app, job):
        decision = job["args"][:1] != ["blocked"]
        decisions.append((job["jid"], decision))
        return decision
    """


@pytest.fixture
def acme_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``acme_unique`` written to a folder on ``sys.path``, unloaded afterwards."""
    (tmp_path / "acme_unique.py").write_text(textwrap.dedent(ACME_UNIQUE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "acme_unique"
    sys.modules.pop("acme_unique", None)


def make_app(redis_url: str, namespace: str, *plugins: str) -> cogworker.App:
    app = cogworker.App(redis_url=redis_url, namespace=namespace, plugins=plugins)

    @app.job(unique="until_executed", name="Sync")
    def sync(account: object) -> None: ...

    return app


def test_a_tryfirst_plugin_replaces_the_builtin_decision(
    acme_module: str, redis_url: str, namespace: str, redis_client: redis.Redis,
    keys: KeySchema,
) -> None:
    app = make_app(redis_url, namespace, f"{acme_module}:")
    try:
        assert "unique" in dict(app.hooks.plugin_manager.list_name_plugin())
        results = [app.push({"class": "Sync", "args": [arg], "unique": "until_executed"})
                   for arg in (1, 1, "blocked")]
    finally:
        app.close()
    assert results[0] is not None and results[1] is not None
    assert results[2] is None
    assert [job["args"] for job in queued(redis_client, keys)] == [[1], [1]]
    assert lock_keys(redis_client, keys) == []
    decisions = sys.modules[acme_module].decisions
    assert [decision for _jid, decision in decisions] == [True, True, False]


def test_no_unique_turns_deduplication_off(
    redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app(redis_url, namespace, "no:unique")
    try:
        assert "unique" not in dict(app.hooks.plugin_manager.list_name_plugin())
        results = [app.push({"class": "Sync", "args": [1], "unique": "until_executed"})
                   for _ in range(2)]
    finally:
        app.close()
    assert None not in results
    assert len(queued(redis_client, keys)) == 2
    assert lock_keys(redis_client, keys) == []


# A plugin with a rule of its own, keyed on an option the builtin does not know.
ACME_EXCLUSIVE = """
    from cogworker.core.markers import hookimpl

    events = []


    @hookimpl
    def cogworker_job_options():
        return ["exclusive"]


    @hookimpl
    def cogworker_acquire_unique_lock(app, job):
        if job.get("exclusive"):
            events.append(("acquire", job["args"]))
            return True
        return None


    @hookimpl
    def cogworker_extend_unique_lock(app, job, wait):
        if job.get("exclusive"):
            events.append(("extend", job["args"]))


    @hookimpl
    def cogworker_release_unique_lock(app, job, reason):
        if job.get("exclusive"):
            events.append((reason, job["args"]))
    """


def test_a_plugin_with_its_own_option_hears_every_release_and_extension(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_url: str, namespace: str,
) -> None:
    (tmp_path / "acme_exclusive.py").write_text(textwrap.dedent(ACME_EXCLUSIVE), "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    app = cogworker.App(redis_url=redis_url, namespace=namespace,
                        plugins=["acme_exclusive:"])

    @app.job(exclusive=True, retry=1)
    def report(outcome: str) -> None:
        if outcome == "fail":
            raise RuntimeError("boom")

    try:
        with app.testing.fake():
            app.testing.freeze()
            report.perform_async("ok")
            report.perform_async("fail")
            report.perform_one()  # "ok" succeeds
            with pytest.raises(RuntimeError):
                report.perform_one()  # "fail" fails: one retry left
            app.testing.advance(3600)
            with pytest.raises(RuntimeError):
                report.perform_one()  # and fails for good
        events = sys.modules["acme_exclusive"].events
    finally:
        app.close()
        sys.modules.pop("acme_exclusive", None)
    assert events == [
        ("acquire", ["ok"]), ("acquire", ["fail"]),
        ("success", ["ok"]),
        ("extend", ["fail"]),
        ("dead", ["fail"]),
    ]
