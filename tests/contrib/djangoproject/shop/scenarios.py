"""Transaction scenarios, run inside the test project by ``tests/contrib/test_django.py``.

``python -m shop.scenarios DATABASE...`` sets Django up, runs every scenario on each
database and prints one JSON object: ``{"name[database]": observations}``, where the
observations are what was on the scenario's queue at each point (or the error raised). The
test process never sets Django up itself: Django allows one configuration per process, and
other tests in the suite configure their own.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import django
import redis

Observations = dict[str, Any]
Scenario = Callable[[str, str], Observations]
SCENARIOS: dict[str, Scenario] = {}


def scenario(func: Scenario) -> Scenario:
    SCENARIOS[func.__name__] = func
    return func


def pushed(queue: str) -> list[list[Any]]:
    """The args of every job on ``queue``, oldest first."""
    from cogworker.contrib.django import get_app
    from cogworker.redis.plugin import key_schema

    client = redis.Redis.from_url(os.environ["CWSITE_REDIS_URL"])
    try:
        raws = client.lrange(key_schema(get_app().settings).queue(queue), 0, -1)
    finally:
        client.close()
    return [json.loads(raw)["args"] for raw in reversed(raws)]


def enqueue(queue: str, database: Any, tag: str) -> str | None:
    from shop.jobs import record_order

    return record_order.set(queue=queue).on_commit(using=database).perform_async(tag, database)


class Rollback(Exception):
    pass


@contextmanager
def rolled_back(database: str) -> Iterator[None]:
    """An ``atomic()`` block that ends in a rollback."""
    from django.db import transaction

    with suppress(Rollback), transaction.atomic(using=database):
        yield
        raise Rollback


@scenario
def outside_a_transaction(queue: str, database: str) -> Observations:
    enqueue(queue, database, "now")
    return {"after": pushed(queue)}


@scenario
def nested_atomic_blocks(queue: str, database: str) -> Observations:
    from django.db import transaction

    with transaction.atomic(using=database):
        enqueue(queue, database, "a")
        with transaction.atomic(using=database):
            enqueue(queue, database, "b")
        inside = pushed(queue)  # the inner block's end released a savepoint only
    return {"inside": inside, "after": pushed(queue)}


@scenario
def rollback(queue: str, database: str) -> Observations:
    with rolled_back(database):
        enqueue(queue, database, "gone")
    return {"after": pushed(queue)}


@scenario
def savepoint_rollback(queue: str, database: str) -> Observations:
    from django.db import transaction

    with transaction.atomic(using=database):
        enqueue(queue, database, "outer")
        with rolled_back(database):  # a savepoint
            enqueue(queue, database, "inner")
            with transaction.atomic(using=database):
                enqueue(queue, database, "innermost")
        enqueue(queue, database, "after")
    return {"after": pushed(queue)}


@scenario
def other_database_in_a_transaction(queue: str, database: str) -> Observations:
    """A transaction on ``database`` does not hold a push named for "default"."""
    from django.db import transaction

    with transaction.atomic(using=database):
        enqueue(queue, "default", "default is in autocommit")
        inside = pushed(queue)
    return {"inside": inside}


@scenario
def class_job_perform_on_commit(queue: str, database: str) -> Observations:
    from django.db import transaction

    from shop.jobs import RecordOrder

    with transaction.atomic():  # the default database, as perform_on_commit names none
        jid = RecordOrder.set(queue=queue).perform_on_commit("class", "default")
        inside = pushed(queue)
    return {"inside": inside, "after": pushed(queue), "jid": jid}


@scenario
def a_using_that_is_no_alias(queue: str, database: str) -> Observations:
    enqueue(queue, 42, "x")
    return {}


@scenario
def no_integration_installed(queue: str, database: str) -> Observations:
    from cogworker.core.transactions import install_binder
    from shop.jobs import record_order

    previous = install_binder(None)
    try:
        record_order.perform_on_commit("x", database)
    finally:
        install_binder(previous)
    return {}


@scenario
def the_app_from_settings(queue: str, database: str) -> Observations:
    from cogworker.contrib.django import app, get_app

    return {"same": app is get_app(), "namespace": app.settings.namespace,
            "registered": "shop.jobs.record_order" in app.registry.names()}


@scenario
def a_misspelt_setting(queue: str, database: str) -> Observations:
    from django.test import override_settings

    from cogworker.contrib.django import _build_app

    with override_settings(COGWORKER={"concurency": 3}):
        _build_app()
    return {}


def run(name: str, database: str) -> Observations:
    try:
        return SCENARIOS[name](f"held-{uuid.uuid4().hex[:8]}", database)
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc)}


def main(databases: list[str]) -> None:
    django.setup()
    results = {f"{name}[{database}]": run(name, database)
               for database in databases for name in SCENARIOS}
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
