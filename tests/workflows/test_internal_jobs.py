"""The workflows plugin's own jobs (a chord's unlock, a group's launch inside a chain):
their death fails their workflow at their step, as a step's does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cogworker.app import App
from cogworker.core.broker import RESULTS, ResultStore
from cogworker.plugins import workflows as plugin
from cogworker.plugins.batches.errors import BatchError
from cogworker.plugins.workflows_names import CHORD_UNLOCK, GROUP_LAUNCH
from cogworker.workflows import chain, group


@pytest.fixture
def app() -> Iterator[App]:
    application = App(redis_url="memory://", plugins=("memory", "no:redis"))
    try:
        yield application
    finally:
        application.close()


def store_of(app: App) -> ResultStore:
    store = app.broker.extension(RESULTS)
    assert store is not None
    return store


@pytest.mark.parametrize(("job", "step"), [
    ({"class": CHORD_UNLOCK, "jid": "u1",
      "args": ["bid", {}, "wf1", 60.0, ["m1", "m2"], [], 2]}, 2),
    ({"class": GROUP_LAUNCH, "jid": "g1",
      "args": [3, {"id": "wf1", "step": 1, "ttl": 60.0, "bid": "b", "members": [],
                   "rest": []}]}, 1),
])
def test_the_death_of_an_internal_job_fails_its_workflow_at_its_step(
        app: App, job: dict[str, object], step: int) -> None:
    app.hooks  # noqa: B018 -- configures the plugins
    store_of(app).start("wf1", steps=3, ttl=60.0)

    plugin.cogworker_job_died(app, dict(job), RuntimeError("gone"))

    record = store_of(app).workflow("wf1")
    assert record is not None
    assert (record.state, record.failed_step) == ("failed", step)
    assert record.error is not None and "died: RuntimeError: gone" in record.error


def test_a_plain_job_dying_touches_no_workflow(app: App) -> None:
    store_of(app).start("wf1", steps=1, ttl=60.0)

    plugin.cogworker_job_died(app, {"class": "other", "jid": "j", "args": []},
                              RuntimeError("x"))

    record = store_of(app).workflow("wf1")
    assert record is not None and record.state == "running"


def test_a_chain_with_a_group_needs_the_batches_plugin() -> None:
    app = App(redis_url="memory://", plugins=("memory", "no:redis", "no:batches"))
    try:
        @app.job(name="one")
        def one(x: int) -> int:
            return x

        with pytest.raises(BatchError, match="batches plugin is not active"):
            chain(one.s(1), group(one.s())).apply_async()
    finally:
        app.close()
