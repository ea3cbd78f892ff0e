"""``job.s(...)`` / ``job.si(...)`` and ``chain(...)``: checked where they are written."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import cogworker
from cogworker.app import App
from cogworker.core.errors import JobArgumentError, JobCallError, JobDefinitionError
from cogworker.workflows import Signature, WorkflowError, chain


@pytest.fixture
def app() -> Iterator[App]:
    application = App(redis_url="redis://127.0.0.1:1/0")  # never contacted: nothing is pushed
    try:
        yield application
    finally:
        application.close()


def test_a_signature_is_an_immutable_value_of_the_call(app: App) -> None:
    @app.job(name="send")
    def send(user_id: int, text: str = "hi") -> None: ...

    signature = send.s(7, text="yo")

    assert isinstance(signature, Signature)
    assert (signature.job, signature.args, dict(signature.kwargs)) == ("send", (7,),
                                                                       {"text": "yo"})
    assert signature.laid_out(with_result=False) == [7, "yo"]
    assert signature == send.s(7, text="yo")
    with pytest.raises(AttributeError):
        signature.args = ()  # type: ignore[misc]


def test_options_come_from_set_on_the_job_or_the_signature(app: App) -> None:
    @app.job(name="send", queue="mail")
    def send(user_id: int) -> None: ...

    assert send.s(1).payload(0.0, with_result=False)["queue"] == "mail"
    assert send.set(queue="urgent").s(1).payload(0.0, with_result=False)["queue"] == "urgent"
    low = send.s(1).set(queue="low", retry=2)
    assert {k: low.payload(0.0, with_result=False)[k] for k in ("queue", "retry")} == {
        "queue": "low", "retry": 2}
    with pytest.raises(JobDefinitionError, match="queuee"):
        send.s(1).set(queuee="low")


def test_class_jobs_have_signatures_too(app: App) -> None:
    @app.job(name="Report")
    class Report(cogworker.Job):
        def perform(self, account_id: int, full: bool = False) -> None: ...

    assert Report.s(3, full=True).laid_out(with_result=False) == [3, True]
    assert Report.si(3).immutable


def test_arguments_that_fit_neither_way_are_an_error_at_s(app: App) -> None:
    @app.job(name="pair")
    def pair(a: int, b: int) -> None: ...

    pair.s(1)  # fits with the previous result in front
    pair.s(1, 2)  # fits as written
    with pytest.raises(JobCallError, match="previous step's result in front"):
        pair.s(1, 2, 3)
    with pytest.raises(JobCallError, match="unexpected keyword"):
        pair.s(1, c=2)
    with pytest.raises(JobCallError):
        pair.si(1)  # an si step never gets the result: it must fit as written


def test_arguments_that_are_not_json_are_an_error_at_s(app: App) -> None:
    @app.job(name="keep")
    def keep(value: object) -> None: ...

    with pytest.raises(JobArgumentError, match="keep"):
        keep.s({1, 2})


def test_a_chain_checks_each_step_for_its_place(app: App) -> None:
    @app.job(name="one")
    def one(x: int) -> int:
        return x

    @app.job(name="nothing")
    def nothing() -> int:
        return 0

    chain(one.s(1), one.s(), nothing.si())
    with pytest.raises(JobCallError, match="step 1 of the chain") as first:
        chain(one.s(), one.s())  # the first step gets no previous result
    assert "missing a required argument" in first.value.problem
    with pytest.raises(JobCallError, match="step 2 of the chain"):
        chain(one.s(1), one.s(2))  # the previous result would be a second argument
    with pytest.raises(JobCallError, match="step 2 of the chain"):
        chain(one.s(1), nothing.s())


def test_a_chain_refuses_what_is_not_a_step(app: App) -> None:
    @app.job(name="one")
    def one() -> int:
        return 1

    with pytest.raises(WorkflowError, match="at least one step"):
        chain()
    with pytest.raises(WorkflowError, match=r"step 2 of the chain is .*not a signature"):
        chain(one.s(), one)  # type: ignore[arg-type]


def test_steps_of_two_apps_are_refused(app: App) -> None:
    other = App(redis_url="redis://127.0.0.1:1/0")
    try:
        @app.job(name="one")
        def one() -> int:
            return 1

        @other.job(name="two")
        def two() -> int:
            return 2

        with pytest.raises(WorkflowError, match="one app"):
            chain(one.s(), two.si())
    finally:
        other.close()
