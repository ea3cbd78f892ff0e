"""Fixtures for the framework integrations: a private PostgreSQL cluster, the Django test
project (``djangoproject/``) set up on SQLite and PostgreSQL, and a real worker for it.

Django is set up once per test session (it cannot be set up twice in one process), with
the session's redis-server and a namespace of its own, deleted at the end. Without
PostgreSQL binaries the PostgreSQL tests are skipped, except when ``CI=true``: there they
fail (``scripts/install-postgres`` installs them).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from cogworker.core.transactions import TransactionBinder, install_binder
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from contrib.postgres import PostgresServer, find_bindir, start_postgres
from helpers.redis_servers import delete_namespace
from helpers.workers import WorkerProcess

PROJECT = Path(__file__).parent / "djangoproject"
IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer | None]:
    """A private PostgreSQL cluster, or None when its binaries are missing (not in CI)."""
    bindir = find_bindir()
    if bindir is None:
        if IN_CI:
            pytest.fail("CI=true but no PostgreSQL binaries (initdb, pg_ctl, postgres) were "
                        "found: run scripts/install-postgres", pytrace=False)
        yield None
        return
    server = start_postgres(bindir)
    try:
        yield server
    finally:
        server.stop()


def create_database(server: PostgresServer, name: str) -> None:
    import psycopg

    with psycopg.connect(server.dsn(), autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')


@pytest.fixture
def restore_binder() -> Iterator[None]:
    """Put back whatever transaction binder was installed before the test."""
    previous = install_binder(None)
    try:
        yield
    finally:
        install_binder(previous)


@dataclass
class DjangoSite:
    """The Django test project, set up in this process."""

    namespace: str
    redis_url: str
    env: dict[str, str]
    databases: list[str]
    keys: KeySchema = field(init=False)

    def __post_init__(self) -> None:
        self.keys = KeySchema(self.namespace)

    def queued(self, client: redis.Redis, queue: str) -> list[dict[str, Any]]:
        """The payloads waiting on ``queue``, oldest first."""
        raws = client.lrange(self.keys.queue(queue), 0, -1)
        return [json.loads(raw) for raw in reversed(raws)]


@pytest.fixture(scope="session")
def django_session(redis_server: RedisServer, postgres_server: PostgresServer | None,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[DjangoSite]:
    """Django set up once for the session (see :func:`django_site`)."""
    namespace = f"t-django-{uuid.uuid4().hex[:8]}"
    env = {
        "DJANGO_SETTINGS_MODULE": "cwsite.settings",
        "CWSITE_SQLITE": str(tmp_path_factory.mktemp("django") / "site.sqlite3"),
        "CWSITE_REDIS_URL": redis_server.url,
        "CWSITE_NAMESPACE": namespace,
    }
    databases = ["default"]
    if postgres_server is not None:
        create_database(postgres_server, "cwsite")
        env["CWSITE_PG_HOST"] = postgres_server.socket_dir
        databases.append("postgres")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        patch.syspath_prepend(str(PROJECT))
        import django
        from django.core.management import call_command

        django.setup()
        for alias in databases:
            call_command("migrate", run_syncdb=True, database=alias, verbosity=0)
        client = redis.Redis.from_url(redis_server.url)
        try:
            yield DjangoSite(namespace, redis_server.url, env, databases)
        finally:
            delete_namespace(client, namespace)
            client.close()


@pytest.fixture
def django_site(django_session: DjangoSite) -> Iterator[DjangoSite]:
    """The Django test project; the project's App closes its connections after the test,
    so that no connection of it outlives the test (other tests count connections)."""
    yield django_session
    from cogworker.contrib.django import get_app

    get_app().close()


@pytest.fixture
def django_binder(django_site: DjangoSite, restore_binder: None) -> TransactionBinder:
    """The Django binder installed (other tests may have replaced it since set-up)."""
    from cogworker.contrib.django import DjangoTransactions

    binder = DjangoTransactions()
    install_binder(binder)
    return binder


@pytest.fixture(scope="module")
def django_worker(django_session: DjangoSite,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """``cogworker run -A cogworker.contrib.django:app`` on the test project, one thread
    (so jobs run in the order they were pushed), the default queue only; stopped after the
    module, so that its connections do not outlive the module's tests."""
    directory = tmp_path_factory.mktemp("django-worker")
    worker = WorkerProcess(
        directory, "cogworker.contrib.django:app", ["-c", "1", "-q", "default"],
        env={**django_session.env, "PYTHONPATH": str(PROJECT)},
    ).start()
    try:
        worker.wait_for_output(" started identity=")
        yield worker
        worker.stop()
    finally:
        worker.close()
