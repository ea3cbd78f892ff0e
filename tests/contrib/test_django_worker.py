"""The issue's "done when": a Django view that enqueues inside ``transaction.atomic()`` sees
its job run after the commit, and not at all after a rollback — with the project served
over HTTP and a real worker (``cogworker run -A cogworker.contrib.django:app``), on SQLite
and on PostgreSQL.

The job records whether it found the order the view created: a job that ran before the
commit finds none (``test_an_immediate_push_runs_before_the_commit`` shows the test can
tell).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any

import pytest

from contrib.conftest import DjangoSite
from helpers.workers import WorkerProcess, wait_until

pytestmark = pytest.mark.slow

WAYS = [("default", "perform_on_commit"), ("default", "class"),
        ("postgres", "on_commit"), ("postgres", "class")]


def post_order(server: str, database: str, how: str, *,
               fail: bool = False) -> tuple[str, dict[str, Any]]:
    token = uuid.uuid4().hex
    form = {"token": token, "how": how, **({"fail": "1"} if fail else {})}
    data = urllib.parse.urlencode(form).encode()
    try:
        with urllib.request.urlopen(f"{server}/orders/{database}/", data=data,
                                    timeout=60) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    assert status == (409 if fail else 200), body
    return token, json.loads(body)


def found_order(site: DjangoSite, database: str, token: str) -> bool | None:
    """What the job recorded for ``token``: whether it found the order; None if it never ran."""
    rows = site.rows(database, "SELECT found_order FROM shop_jobrun WHERE token = ?", token)
    return bool(rows[0][0]) if rows else None


def wait_for_job(site: DjangoSite, worker: WorkerProcess, database: str, token: str) -> bool:
    wait_until(lambda: found_order(site, database, token) is not None, 30,
               lambda: f"the job for {token} never ran:\n{worker.output()[-3000:]}")
    found = found_order(site, database, token)
    assert found is not None
    return found


def need(site: DjangoSite, database: str) -> None:
    if database not in site.databases:
        pytest.skip("PostgreSQL binaries are not installed (scripts/install-postgres)")


@pytest.mark.parametrize(("database", "how"), WAYS)
def test_the_job_runs_after_the_commit_and_finds_the_row(
        django_site: DjangoSite, django_server: str, django_worker: WorkerProcess,
        database: str, how: str) -> None:
    need(django_site, database)
    token, body = post_order(django_server, database, how)

    found = wait_for_job(django_site, django_worker, database, token)

    assert body["committed"] is True
    assert len(body["jid"]) == 24
    assert found is True


@pytest.mark.parametrize(("database", "how"), WAYS)
def test_after_a_rollback_the_job_never_runs(
        django_site: DjangoSite, django_server: str, django_worker: WorkerProcess,
        database: str, how: str) -> None:
    need(django_site, database)
    rolled_back, body = post_order(django_server, database, how, fail=True)
    marker, _ = post_order(django_server, database, how)  # runs after it, on one thread
    wait_for_job(django_site, django_worker, database, marker)

    assert body["committed"] is False
    assert found_order(django_site, database, rolled_back) is None
    assert django_site.rows(database, "SELECT 1 FROM shop_order WHERE token = ?",
                            rolled_back) == []


def test_an_immediate_push_runs_before_the_commit(
        django_site: DjangoSite, django_server: str, django_worker: WorkerProcess) -> None:
    """The bug on-commit enqueue prevents: perform_async inside atomic(), the transaction
    held open until the job ran — it ran, and found no order."""
    need(django_site, "postgres")
    token, _ = post_order(django_server, "postgres", "immediate")

    assert found_order(django_site, "postgres", token) is False
