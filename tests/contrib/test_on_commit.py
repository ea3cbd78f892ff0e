"""The core's on-commit path, with a binder of the test's own (no framework): what is
checked at the call, what waits for the commit, and what each job kind offers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import cogworker
from cogworker.app import App
from cogworker.core.errors import JobArgumentError, TransactionBinderError
from cogworker.core.transactions import Push, install_binder, installed_binder


class HeldBinder:
    """Holds every push until ``commit()``; records the ``using`` each came with."""

    name = "held"

    def __init__(self) -> None:
        self.held: list[tuple[Push, object]] = []

    def on_commit(self, push: Push, using: object) -> None:
        self.held.append((push, using))

    def commit(self) -> None:
        held, self.held = self.held, []
        for push, _ in held:
            push()


@pytest.fixture
def binder(restore_binder: None) -> HeldBinder:
    binder = HeldBinder()
    install_binder(binder)
    return binder


@pytest.fixture
def app() -> Iterator[App]:
    app = App(redis_url="redis://127.0.0.1:1/0")  # fake mode: never connects
    with app.testing.fake():
        yield app


def test_a_function_job_waits_for_the_commit(app: App, binder: HeldBinder) -> None:
    @app.job(queue="mail")
    def send(user_id: int) -> None: ...

    jid = send.perform_on_commit(7)
    assert send.jobs == []

    binder.commit()

    assert [(job["jid"], job["args"], job["queue"]) for job in send.jobs] == [(jid, [7], "mail")]


def test_a_job_class_and_set_keep_their_options(app: App, binder: HeldBinder) -> None:
    @app.job
    class Report(cogworker.Job):
        queue = "reports"

        def perform(self, account: int) -> None: ...

    Report.perform_on_commit(1)
    Report.set(queue="urgent").on_commit(using="replica").perform_async(2)
    Report.on_commit().set(retry=3).perform_at(4_000_000_000, 3)
    Report.on_commit(using="replica").perform_on_commit(4)

    assert [using for _, using in binder.held] == [None, "replica", None, "replica"]
    binder.commit()
    assert [(job["args"], job["queue"], job.get("at")) for job in Report.jobs] == [
        ([1], "reports", None), ([2], "urgent", None), ([3], "reports", 4_000_000_000.0),
        ([4], "reports", None)]
    assert Report.jobs[2]["retry"] == 3


def test_a_bad_argument_fails_at_the_call_not_at_the_commit(app: App,
                                                            binder: HeldBinder) -> None:
    @app.job
    def send(value: object) -> None: ...

    with pytest.raises(JobArgumentError, match="not JSON"):
        send.perform_on_commit(object())

    assert binder.held == []


def test_without_a_binder_the_error_names_both_integrations(app: App,
                                                            restore_binder: None) -> None:
    @app.job
    def send(value: int) -> None: ...

    assert installed_binder() is None
    with pytest.raises(TransactionBinderError) as raised:
        send.on_commit()

    assert "cogworker.contrib.django" in str(raised.value)
    assert "cogworker.contrib.sqlalchemy.install()" in str(raised.value)
    assert send.jobs == []


def test_install_binder_returns_the_previous_one(restore_binder: None) -> None:
    first, second = HeldBinder(), HeldBinder()

    assert install_binder(first) is None
    assert install_binder(second) is first
    assert installed_binder() is second
