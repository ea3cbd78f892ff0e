"""``cogworker.contrib.django`` in this process, against the session's real Redis and real
databases (SQLite, and PostgreSQL when installed): when a push happens relative to
``transaction.atomic()``, savepoints included; the settings; the errors.

The jobs go to a queue of the test's own that no worker reads, so the test sees exactly
what was pushed and when.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest
import redis

from cogworker.core.errors import ConfigurationError, TransactionBinderError
from contrib.conftest import PROJECT, DjangoSite

Pushed = Callable[[], list[list[Any]]]


@pytest.fixture(params=["default", "postgres"])
def database(request: pytest.FixtureRequest, django_site: DjangoSite) -> str:
    alias: str = request.param
    if alias not in django_site.databases:
        pytest.skip("PostgreSQL binaries are not installed (scripts/install-postgres)")
    return alias


@pytest.fixture
def queue() -> str:
    return f"held-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def pushed(django_site: DjangoSite, queue: str) -> Iterator[Pushed]:
    """``pushed()``: the args of every job on the test's queue, oldest first."""
    client = redis.Redis.from_url(django_site.redis_url)
    try:
        yield lambda: [job["args"] for job in django_site.queued(client, queue)]
    finally:
        client.delete(django_site.keys.queue(queue))
        client.close()


def enqueue(queue: str, database: str, tag: str) -> str | None:
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


@pytest.mark.usefixtures("django_binder")
class TestWhenJobsArePushed:
    def test_outside_a_transaction_at_once(self, queue: str, database: str,
                                           pushed: Pushed) -> None:
        enqueue(queue, database, "now")

        assert pushed() == [["now", database]]

    def test_inside_atomic_after_the_outermost_commit(self, queue: str, database: str,
                                                       pushed: Pushed) -> None:
        from django.db import transaction

        with transaction.atomic(using=database):
            enqueue(queue, database, "a")
            with transaction.atomic(using=database):
                enqueue(queue, database, "b")
            assert pushed() == []  # the inner block's end released a savepoint only

        assert pushed() == [["a", database], ["b", database]]

    def test_a_rollback_drops_them(self, queue: str, database: str, pushed: Pushed) -> None:
        with rolled_back(database):
            enqueue(queue, database, "gone")

        assert pushed() == []

    def test_a_savepoint_rolled_back_drops_only_its_own(self, queue: str, database: str,
                                                         pushed: Pushed) -> None:
        from django.db import transaction

        with transaction.atomic(using=database):
            enqueue(queue, database, "outer")
            with rolled_back(database):  # a savepoint
                enqueue(queue, database, "inner")
                with transaction.atomic(using=database):
                    enqueue(queue, database, "innermost")
            enqueue(queue, database, "after")

        assert pushed() == [["outer", database], ["after", database]]

    def test_another_databases_transaction_does_not_hold_them(
            self, django_site: DjangoSite, queue: str, pushed: Pushed) -> None:
        """on_commit(using=...) names the database whose commit counts."""
        from django.db import transaction

        if "postgres" not in django_site.databases:
            pytest.skip("PostgreSQL binaries are not installed (scripts/install-postgres)")
        with transaction.atomic(using="postgres"):
            enqueue(queue, "default", "default is in autocommit")
            assert pushed() == [["default is in autocommit", "default"]]

    def test_perform_on_commit_uses_the_default_database(self, queue: str,
                                                         pushed: Pushed) -> None:
        from django.db import transaction
        from shop.jobs import RecordOrder

        with transaction.atomic():
            jid = RecordOrder.set(queue=queue).perform_on_commit("class", "default")
            assert pushed() == []

        assert pushed() == [["class", "default"]]
        assert isinstance(jid, str)

    def test_a_using_that_is_no_alias_is_refused(self, queue: str) -> None:
        with pytest.raises(TransactionBinderError, match="database alias such as 'default'"):
            enqueue(queue, 42, "x")  # type: ignore[arg-type]


def test_the_app_comes_from_settings_cogworker(django_site: DjangoSite) -> None:
    from cogworker.contrib.django import app, get_app

    assert app is get_app()
    assert app.settings.namespace == django_site.namespace
    assert "shop.jobs.record_order" in app.registry.names()


def test_a_bad_setting_names_settings_cogworker(django_site: DjangoSite) -> None:
    from django.test import override_settings

    from cogworker.contrib.django import _build_app

    with override_settings(COGWORKER={"concurency": 3}), pytest.raises(
            ConfigurationError, match=r"'concurency'.*from settings.COGWORKER"):
        _build_app()


def test_without_a_settings_module_the_worker_says_what_to_set() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-m", "cogworker", "run", "-A", "cogworker.contrib.django:app"],
        env={**env, "PYTHONPATH": str(PROJECT)}, capture_output=True, text=True, timeout=60,
        check=False,
    )

    assert result.returncode == 2, result.stderr
    assert "DJANGO_SETTINGS_MODULE" in result.stderr
    assert "Traceback" not in result.stderr


def test_without_an_integration_perform_on_commit_says_what_to_install(
        django_site: DjangoSite, restore_binder: None) -> None:
    from shop.jobs import record_order

    with pytest.raises(TransactionBinderError, match=r"cogworker\.contrib\.django"):
        record_order.perform_on_commit("x", "default")


def test_importing_cogworker_imports_no_framework() -> None:
    code = ("import sys, cogworker, cogworker.contrib, cogworker.core.transactions; "
            "print(sorted({'django', 'sqlalchemy'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)

    assert result.stdout.strip() == "[]"
