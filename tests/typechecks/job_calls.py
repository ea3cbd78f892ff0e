# pyright: strict
"""Calls that mypy and pyright must accept, and calls they must flag.

Not a test module (pytest does not collect it, and the project's mypy run excludes it):
``test_job_call_types.py`` runs both checkers over this file. A line that a checker must
flag ends with an expected-error marker naming the error code per checker::

    send.perform_async("42")  # expect-error: mypy=arg-type pyright=reportArgumentType

and every other line must pass both. ``assert_type`` pins the types that calls return.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Coroutine
from typing import Any

from typing_extensions import assert_type

import cogworker
from cogworker.core.enqueuer import Enqueuer

app = cogworker.App(redis_url="redis://127.0.0.1:1/0")


# Function jobs ------------------------------------------------------------------------------
@app.job
def send_welcome(user_id: int, greeting: str = "hi") -> bool:
    return bool(user_id and greeting)


@app.job(queue="mail", retry=3)
def notify(account: str, *tags: str) -> None: ...


@app.job
async def fetch(url: str) -> bytes:
    return url.encode()


@app.job(queue="slow")
def wait(delay: int) -> None: ...  # a parameter named like perform_in's own


assert_type(send_welcome(1), bool)
assert_type(send_welcome(1, greeting="hello"), bool)
pending: Coroutine[Any, Any, bytes] = fetch("u")  # an async job called directly: a coroutine
pending.close()
assert_type(send_welcome.perform_async(42), str | None)
assert_type(send_welcome.perform_async(42, "hello"), str | None)
assert_type(send_welcome.perform_async(42, greeting="hello"), str | None)
assert_type(send_welcome.perform_async(user_id=42), str | None)
assert_type(send_welcome.perform_in(30, 42), str | None)
assert_type(send_welcome.perform_in(dt.timedelta(minutes=5), 42, greeting="x"), str | None)
assert_type(send_welcome.perform_at(dt.datetime(2030, 1, 1), 42), str | None)
assert_type(send_welcome.perform_at(1_900_000_000.0, user_id=42), str | None)
assert_type(send_welcome.perform_on_commit(42), str | None)
assert_type(send_welcome.set(queue="urgent").perform_async(42), str | None)
assert_type(send_welcome.set(queue="urgent").perform_in(5, 42, "yo"), str | None)
assert_type(send_welcome.on_commit(using="default").perform_async(42), str | None)
assert_type(send_welcome.on_commit().perform_on_commit(user_id=42), str | None)
assert_type(send_welcome.set(retry=1).on_commit().perform_at(2.0, 42), str | None)
assert_type(notify.perform_async("acme"), str | None)
assert_type(notify.perform_async("acme", "new", "vip"), str | None)
assert_type(fetch.perform_async("https://example.invalid/"), str | None)
assert_type(wait.perform_in(5, delay=3), str | None)
assert_type(send_welcome.name, str)

enqueue_welcome: Callable[[int], str | None] = send_welcome.perform_async
welcome_enqueuer: Enqueuer[[int, str]] = send_welcome.set(queue="q")
any_job: cogworker.JobFunction = send_welcome  # a bare JobFunction: any job function
assert_type(any_job.perform_async("anything", 1, 2, key=3), str | None)

send_welcome.perform_async("42", extra=1)  # expect-error: mypy=call-arg,arg-type pyright=reportCallIssue
send_welcome.perform_async("42")  # expect-error: mypy=arg-type pyright=reportArgumentType
send_welcome.perform_async()  # expect-error: mypy=call-arg pyright=reportCallIssue
send_welcome.perform_async(1, "hi", "extra")  # expect-error: mypy=call-arg pyright=reportCallIssue
send_welcome.perform_async(1, greting="hi")  # expect-error: mypy=call-arg pyright=reportCallIssue
send_welcome.perform_async(1, greeting=2)  # expect-error: mypy=arg-type pyright=reportArgumentType
send_welcome.perform_in(30, "42")  # expect-error: mypy=arg-type pyright=reportArgumentType
send_welcome.perform_in("soon", 42)  # expect-error: mypy=arg-type pyright=reportArgumentType
send_welcome.perform_at(dt.date(2030, 1, 1), 42)  # expect-error: mypy=arg-type pyright=reportArgumentType
send_welcome.perform_at(2.0)  # expect-error: mypy=call-arg pyright=reportCallIssue
send_welcome.perform_on_commit("42")  # expect-error: mypy=arg-type pyright=reportArgumentType
send_welcome.set(queue="urgent").perform_async("42")  # expect-error: mypy=arg-type pyright=reportArgumentType
send_welcome.on_commit().perform_async(1, 2)  # expect-error: mypy=arg-type pyright=reportArgumentType
send_welcome.on_commit(using=None).perform_in(5)  # expect-error: mypy=call-arg pyright=reportCallIssue
send_welcome("42")  # expect-error: mypy=arg-type pyright=reportArgumentType
notify.perform_async("acme", 1)  # expect-error: mypy=arg-type pyright=reportArgumentType
fetch.perform_async(b"bytes")  # expect-error: mypy=arg-type pyright=reportArgumentType
wait.perform_in(delay=3)  # expect-error: mypy=call-arg pyright=reportCallIssue
wrong_signature: Callable[[str], str | None] = send_welcome.perform_async  # expect-error: mypy=assignment pyright=reportAssignmentType
wrong_enqueuer: Enqueuer[[str]] = send_welcome.set()  # expect-error: mypy=assignment pyright=reportAssignmentType


# Job classes --------------------------------------------------------------------------------
@app.job
class Report(cogworker.Job):
    def perform(self, account_id: int, full: bool = False) -> None: ...


@app.job(queue="exports", retry=5)
class Export(cogworker.Job):
    async def perform(self, path: str, *columns: str) -> None: ...


class Monthly(Report):  # a subclass keeps its parent's perform, and so its parameters
    queue = "monthly"


app.job(Monthly, name="MonthlyReport")

assert_type(Report, type[Report])
assert_type(Report.perform_async(42), str | None)
assert_type(Report.perform_async(42, full=True), str | None)
assert_type(Report.perform_async(account_id=42), str | None)
assert_type(Report.perform_in(60, 42), str | None)
assert_type(Report.perform_at(dt.datetime(2030, 1, 1), 42, True), str | None)
assert_type(Report.perform_on_commit(42), str | None)
assert_type(Report.set(queue="q").perform_async(42), str | None)
assert_type(Report.on_commit(using="replica").perform_async(42, full=False), str | None)
assert_type(Export.perform_async("/tmp/x.csv", "id", "name"), str | None)
assert_type(Export.set(retry=0).perform_in(dt.timedelta(seconds=1), "/tmp/x"), str | None)
assert_type(Monthly.perform_async(7), str | None)

report_enqueuer: Enqueuer[[int, bool]] = Report.set()


def enqueue_any(job_class: type[cogworker.Job]) -> str | None:
    return job_class.perform_async("anything", 1, key=2)  # the base class: unchecked


Report.perform_async("42")  # expect-error: mypy=arg-type pyright=reportArgumentType
Report.perform_async()  # expect-error: mypy=call-arg pyright=reportCallIssue
Report.perform_async(42, True, "extra")  # expect-error: mypy=call-arg pyright=reportCallIssue
Report.perform_async(42, ful=True)  # expect-error: mypy=call-arg pyright=reportCallIssue
Report.perform_in(60, "42")  # expect-error: mypy=arg-type pyright=reportArgumentType
Report.perform_at("tomorrow", 42)  # expect-error: mypy=arg-type pyright=reportArgumentType
Report.perform_on_commit(full=True)  # expect-error: mypy=call-arg pyright=reportCallIssue
Report.set(queue="q").perform_async("42")  # expect-error: mypy=arg-type pyright=reportArgumentType
Report.on_commit().perform_async(42, "yes")  # expect-error: mypy=arg-type pyright=reportArgumentType
Export.perform_async("/tmp/x", 1)  # expect-error: mypy=arg-type pyright=reportArgumentType
Monthly.perform_async("7")  # expect-error: mypy=arg-type pyright=reportArgumentType
wrong_report_enqueuer: Enqueuer[[str]] = Report.set()  # expect-error: mypy=assignment pyright=reportAssignmentType
