"""The issue's "done when": a Django view that enqueues inside ``transaction.atomic()`` sees
its job run after the commit, and not at all after a rollback — with a real worker
(``cogworker run -A cogworker.contrib.django:app``), on SQLite and on PostgreSQL.

The job records whether it found the order the view created: a job that ran before the
commit finds none (``test_an_immediate_push_runs_before_the_commit`` shows the test can
tell).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from contrib.conftest import DjangoSite
from helpers.workers import WorkerProcess, wait_until

pytestmark = pytest.mark.slow

WAYS = [("default", "perform_on_commit"), ("default", "class"),
        ("postgres", "on_commit"), ("postgres", "class")]


def post_order(database: str, how: str, *, fail: bool = False) -> tuple[str, dict[str, Any]]:
    from django.test import Client

    token = uuid.uuid4().hex
    data = {"token": token, "how": how, **({"fail": "1"} if fail else {})}
    response = Client().post(f"/orders/{database}/", data)
    assert response.status_code == (409 if fail else 200), response.content
    return token, response.json()


def job_run(database: str, token: str) -> Any:
    from shop.models import JobRun

    return JobRun.objects.using(database).filter(token=token).first()


def wait_for_job_run(worker: WorkerProcess, database: str, token: str) -> Any:
    wait_until(lambda: job_run(database, token) is not None, 30,
               lambda: f"the job for {token} never ran:\n{worker.output()[-3000:]}")
    return job_run(database, token)


def need(site: DjangoSite, database: str) -> None:
    if database not in site.databases:
        pytest.skip("PostgreSQL binaries are not installed (scripts/install-postgres)")


@pytest.mark.parametrize(("database", "how"), WAYS)
def test_the_job_runs_after_the_commit_and_finds_the_row(
        django_site: DjangoSite, django_worker: WorkerProcess, database: str, how: str) -> None:
    need(django_site, database)
    token, body = post_order(database, how)

    run = wait_for_job_run(django_worker, database, token)

    assert body["committed"] is True
    assert len(body["jid"]) == 24
    assert run.found_order is True


@pytest.mark.parametrize(("database", "how"), WAYS)
def test_after_a_rollback_the_job_never_runs(
        django_site: DjangoSite, django_worker: WorkerProcess, database: str, how: str) -> None:
    need(django_site, database)
    from shop.models import Order

    rolled_back, body = post_order(database, how, fail=True)
    marker, _ = post_order(database, how)  # pushed after it: runs after it, on one thread
    wait_for_job_run(django_worker, database, marker)

    assert body["committed"] is False
    assert job_run(database, rolled_back) is None
    assert not Order.objects.using(database).filter(token=rolled_back).exists()


def test_an_immediate_push_runs_before_the_commit(
        django_site: DjangoSite, django_worker: WorkerProcess) -> None:
    """The bug on-commit enqueue prevents: perform_async inside atomic(), the transaction
    held open until the job ran — it ran, and found no order."""
    need(django_site, "postgres")
    token, _ = post_order("postgres", "immediate")

    assert job_run("postgres", token).found_order is False
