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
