"""Fixtures for the framework integrations: a private PostgreSQL cluster, the Django test
project (``djangoproject/``) on SQLite and PostgreSQL, served over HTTP, and a real worker.

Django runs only in subprocesses (the project's server, its worker, its scenarios): it
allows one configuration per process, and other tests of the suite configure their own.
The project uses the session's redis-server with a namespace of its own. Without
PostgreSQL binaries the PostgreSQL tests are skipped, except when ``CI=true``: there they
fail (``scripts/install-postgres`` installs them).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from cogworker.core.transactions import install_binder
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from contrib.postgres import PostgresServer, find_bindir, start_postgres
from helpers.redis_servers import delete_namespace
from helpers.workers import WorkerProcess, wait_until

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
    """The Django test project: what its processes get in their environment, and direct
    reads of its databases (the test process never sets Django up: one configuration per
    process, and other tests in the suite configure their own)."""

    namespace: str
    redis_url: str
    env: dict[str, str]
    databases: list[str]
    postgres: PostgresServer | None
    keys: KeySchema = field(init=False)

    def __post_init__(self) -> None:
        self.keys = KeySchema(self.namespace)

    def python(self, *args: str, timeout: float = 120) -> str:
        """``python *args`` in the project's environment; returns its stdout."""
        result = subprocess.run([sys.executable, *args], cwd=PROJECT, env=self.process_env(),
                                capture_output=True, text=True, timeout=timeout, check=False)
        assert result.returncode == 0, f"{args} failed:\n{result.stdout}{result.stderr}"
        return result.stdout

    def process_env(self) -> dict[str, str]:
        return {**os.environ, **self.env, "PYTHONPATH": str(PROJECT)}

    def rows(self, database: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
        """Run a query on one of the project's databases (``?`` placeholders)."""
        if database == "default":
            with closing(sqlite3.connect(self.env["CWSITE_SQLITE"], timeout=30)) as db:
                return db.execute(sql, params).fetchall()
        import psycopg

        assert self.postgres is not None
        with psycopg.connect(self.postgres.dsn("cwsite")) as connection:
            return connection.execute(sql.replace("?", "%s"), params).fetchall()


@pytest.fixture(scope="session")
def django_site(redis_server: RedisServer, postgres_server: PostgresServer | None,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[DjangoSite]:
    """The test project's databases created and migrated, on the session's Redis with a
    namespace of its own (deleted at the end)."""
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
    site = DjangoSite(namespace, redis_server.url, env, databases, postgres_server)
    for alias in databases:
        site.python("-m", "django", "migrate", "--run-syncdb", "--database", alias,
                    "--verbosity", "0")
    client = redis.Redis.from_url(redis_server.url)
    try:
        yield site
    finally:
        delete_namespace(client, namespace)
        client.close()


@pytest.fixture(scope="module")
def django_server(django_site: DjangoSite,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The test project served over HTTP on 127.0.0.1 (``python -m cwsite.serve``); its URL."""
    log_path = tmp_path_factory.mktemp("django-server") / "server.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen([sys.executable, "-m", "cwsite.serve"], cwd=PROJECT,
                                  env=django_site.process_env(), stdout=log,
                                  stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: b"listening on" in log_path.read_bytes()
                   or server.poll() is not None, 60, log_path.read_text)
        assert server.poll() is None, log_path.read_text()
        port = log_path.read_text().split("listening on ", 1)[1].split()[0]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def django_worker(django_site: DjangoSite,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """``cogworker run -A cogworker.contrib.django:app`` on the test project, one thread
    (so jobs run in the order they were pushed), the default queue only; stopped after the
    module, so that its connections do not outlive the module's tests."""
    directory = tmp_path_factory.mktemp("django-worker")
    worker = WorkerProcess(
        directory, "cogworker.contrib.django:app", ["-c", "1", "-q", "default"],
        env={**django_site.env, "PYTHONPATH": str(PROJECT)},
    ).start()
    try:
        worker.wait_for_output(" started identity=")
        yield worker
        worker.stop()
    finally:
        worker.close()
