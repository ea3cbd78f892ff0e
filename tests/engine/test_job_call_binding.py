"""Keyword arguments bound to positions at enqueue, against a real Redis: what is stored,
which calls fail before anything is pushed, and which jobs are refused at decoration."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

import cogworker
from cogworker.core.errors import JobArgumentError, JobCallError, JobDefinitionError
from cogworker.core.transactions import Push, install_binder
from cogworker.redis.keys import KeySchema


@pytest.fixture
def app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[cogworker.App]:
    application = cogworker.App(redis_url=redis_url, namespace=namespace)
    yield application
    application.close()


def queued(client: redis.Redis, keys: KeySchema, queue: str = "default") -> list[Any]:
    """The stored ``args`` of the jobs on a queue, oldest first."""
    return [json.loads(raw)["args"] for raw in reversed(client.lrange(keys.queue(queue), 0, -1))]


def scheduled(client: redis.Redis, keys: KeySchema) -> list[Any]:
    entries: list[bytes] = client.zrange(keys.schedule, 0, -1)  # type: ignore[assignment]
    return [json.loads(raw)["args"] for raw in entries]


def test_keyword_arguments_are_stored_at_their_positions(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job
    def resize(image_id: int, width: int = 100, height: int = 100) -> None: ...

    resize.perform_async(1)
    resize.perform_async(2, width=300)
    resize.perform_async(image_id=3, height=50)  # width's default fills the gap
    resize.perform_async(4, 5, 6)
    resize.perform_async(height=9, width=8, image_id=7)
    assert queued(redis_client, keys) == [[1], [2, 300], [3, 100, 50], [4, 5, 6], [7, 8, 9]]


def test_the_payload_is_the_positional_one_a_ruby_worker_reads(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(name="HardWorker", queue="critical")
    def hard(name: str, count: int) -> None: ...

    jid = hard.perform_async(count=2, name="bob")
    raw = redis_client.lindex(keys.queue("critical"), 0)
    assert raw is not None
    job = json.loads(raw)
    assert job["args"] == ["bob", 2] and job["jid"] == jid and job["class"] == "HardWorker"
    assert not {"kwargs", "count", "name"} & set(job)  # nothing but Sidekiq's fields


def test_star_args_and_positional_only_parameters(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job
    def tag(account: str, /, *tags: str) -> None: ...

    @app.job
    def mark(account: str, note: str = "", /) -> None: ...

    tag.perform_async("acme")
    tag.perform_async("acme", "new", "vip")
    mark.perform_async("acme", "late")
    assert queued(redis_client, keys) == [["acme"], ["acme", "new", "vip"], ["acme", "late"]]
    with pytest.raises(JobCallError, match="'account' parameter is positional only"):
        tag.perform_async(account="acme")  # type: ignore[call-arg]


def test_class_jobs_bind_to_perform_without_self(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job
    class Report(cogworker.Job):
        def perform(self, month: int, year: int = 2026, draft: bool = False) -> None: ...

    @app.job
    class Ping(cogworker.Job):
        @staticmethod
        def perform(host: str) -> None: ...

    Report.perform_async(5, draft=True)
    Report.set(queue="default").perform_async(month=6)
    Ping.perform_async(host="db")
    assert queued(redis_client, keys) == [[5, 2026, True], [6], ["db"]]
    with pytest.raises(JobCallError, match=r"takes \(month, year=2026, draft=False\)"):
        Report.perform_async()  # type: ignore[call-arg]


def test_scheduled_and_overridden_calls_bind_too(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job
    def wait(delay: int, label: str = "") -> None: ...

    wait.perform_in(60, delay=5)  # the job's own "delay" is not perform_in's
    wait.perform_at(4_000_000_000, 1, label="x")
    wait.set(queue="low").perform_in(30, label="y", delay=2)
    assert sorted(scheduled(redis_client, keys)) == [[1, "x"], [2, "y"], [5]]


def test_the_job_still_receives_what_was_passed(app: cogworker.App) -> None:
    received: list[tuple[int, int, int]] = []

    @app.job
    def add(a: int, b: int = 10, c: int = 100) -> None:
        received.append((a, b, c))

    with app.testing.inline():
        add.perform_async(1, c=3)
        add.perform_async(c=5, a=4)
        add.perform_async(6, 7)
    assert received == [(1, 10, 3), (4, 10, 5), (6, 7, 100)]


@pytest.mark.parametrize(("call", "problem"), [
    (lambda job: job.perform_async("42", extra=1),
     "and the call ('42', extra=1) does not fit: got an unexpected keyword argument 'extra'"),
    (lambda job: job.perform_async(),
     "and the call () does not fit: missing a required argument: 'user_id'"),
    (lambda job: job.perform_async(1, "hi", "extra"),
     "and the call (1, 'hi', 'extra') does not fit: too many positional arguments"),
    (lambda job: job.perform_async(1, user_id=2),
     "does not fit: multiple values for argument 'user_id'"),
    (lambda job: job.perform_in(60, greeting="hi"),
     "and the call (greeting='hi') does not fit: missing a required argument: 'user_id'"),
    (lambda job: job.set(queue="other").perform_at(4_000_000_000, 1, 2, 3),
     "does not fit: too many positional arguments"),
])
def test_a_call_that_does_not_bind_fails_at_enqueue(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema, call: Any, problem: str
) -> None:
    @app.job(name="send_welcome")
    def send_welcome(user_id: int, greeting: str = "hi") -> None: ...

    with pytest.raises(JobCallError) as caught:
        call(send_welcome)
    message = str(caught.value)
    assert message.startswith("job 'send_welcome' takes (user_id, greeting='hi'), ")
    assert problem in message
    assert isinstance(caught.value, JobArgumentError) and isinstance(caught.value, TypeError)
    assert redis_client.exists(keys.queue("default"), keys.queue("other"), keys.schedule) == 0


def test_binding_comes_before_the_json_check(app: cogworker.App) -> None:
    @app.job(name="when")
    def when(day: str, at: str = "") -> None: ...

    with pytest.raises(JobArgumentError, match=r"argument #2 of job 'when' is a set"):
        when.perform_async(at={1}, day="mon")  # type: ignore[arg-type]


def test_a_long_call_is_shown_shortened(app: cogworker.App) -> None:
    @app.job(name="one")
    def one(x: str) -> None: ...

    with pytest.raises(JobCallError) as caught:
        one.perform_async("a" * 500, "b")  # type: ignore[call-arg]
    assert "does not fit: too many positional arguments" in str(caught.value)
    assert len(str(caught.value)) < 400


def test_a_job_without_a_readable_signature_takes_positional_arguments(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    builtin: Callable[..., Any] = min  # Python cannot read a builtin's signature
    smallest = app.job(builtin, name="smallest")
    smallest.perform_async(3, 1, 2)
    assert queued(redis_client, keys) == [[3, 1, 2]]
    with pytest.raises(JobCallError, match="its signature cannot be read"):
        smallest.perform_async(3, key=abs)


def test_on_commit_binds_at_the_call_not_at_the_commit(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    held: list[Push] = []

    class HeldBinder:
        name = "held"

        def on_commit(self, push: Push, using: object) -> None:
            held.append(push)

    @app.job(name="greet")
    def greet(name: str, punctuation: str = "!") -> None: ...

    previous = install_binder(HeldBinder())
    try:
        greet.perform_on_commit(punctuation="?", name="ada")
        greet.on_commit(using="other").perform_async("bob")
        with pytest.raises(JobCallError, match="unexpected keyword argument 'nmae'"):
            greet.perform_on_commit("ada", nmae="!")  # type: ignore[call-arg]
    finally:
        install_binder(previous)
    assert len(held) == 2 and redis_client.llen(keys.queue("default")) == 0
    for push in held:
        push()
    assert queued(redis_client, keys) == [["ada", "?"], ["bob"]]


def test_push_bulk_checks_every_item_before_pushing(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(name="pair")
    def pair(a: int, b: int = 0) -> None: ...

    @app.job
    class Single(cogworker.Job):
        def perform(self, a: int) -> None: ...

    assert len(app.push_bulk(pair, [[1], [2, 3]])) == 2
    assert len(app.push_bulk(Single, [[4]])) == 1
    assert len(app.push_bulk("pair", [(5, 6)])) == 1
    assert queued(redis_client, keys) == [[1], [2, 3], [4], [5, 6]]
    with pytest.raises(JobCallError, match=r"args_list\[2\] = \[7, 8, 9\] does not fit: too many"):
        app.push_bulk(pair, [[1], [2], [7, 8, 9]])
    with pytest.raises(JobCallError, match=r"args_list\[0\] = \[\] does not fit: missing"):
        app.push_bulk(Single, [[]])
    assert redis_client.llen(keys.queue("default")) == 4


def test_keyword_only_parameters_are_refused_at_decoration() -> None:
    app = cogworker.App(redis_url="redis://127.0.0.1:1/0")
    with pytest.raises(JobDefinitionError, match=(
            r"job 'notify' has keyword-only parameters \(urgent\), which a job cannot take: "
            r"its arguments are stored as one positional list")):
        @app.job(name="notify")
        def notify(user_id: int, *, urgent: bool = False) -> None: ...

    with pytest.raises(JobDefinitionError, match=r"keyword-only parameters \(full\)"):
        @app.job(name="Export")
        class Export(cogworker.Job):
            def perform(self, path: str, *columns: str, full: bool = False) -> None: ...

    assert "notify" not in app.registry and "Export" not in app.registry


def test_star_star_kwargs_is_refused_at_decoration() -> None:
    app = cogworker.App(redis_url="redis://127.0.0.1:1/0")
    with pytest.raises(JobDefinitionError, match=(
            r"job 'log' takes \*\*fields, which a job cannot: .* every argument needs a "
            r"position. Name the parameters, or take one dict parameter")):
        @app.job(name="log")
        def log(message: str, **fields: Any) -> None: ...


def test_retry_hooks_given_to_a_class_are_refused() -> None:
    app = cogworker.App(redis_url="redis://127.0.0.1:1/0")

    class Sync(cogworker.Job):
        def perform(self) -> None: ...

    with pytest.raises(JobDefinitionError, match="define them as methods of the class"):
        app.job(Sync, retry_in=lambda count, exc, job: 5)
