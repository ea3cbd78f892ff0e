"""``cogworker.contrib.sqlalchemy``: pushes wait for a ``Session``'s outermost commit, are
dropped by its rollback, and by a ``begin_nested()`` savepoint's rollback only for the ones
registered inside it — on a real SQLite file and on PostgreSQL, pushing to the test's real
Redis; an ``AsyncSession`` (aiosqlite) too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import Engine, String, create_engine, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, scoped_session
from sqlalchemy.orm import sessionmaker as make_sessionmaker

from cogworker.app import App
from cogworker.contrib import sqlalchemy as cogworker_sqlalchemy
from cogworker.core.errors import TransactionBinderError
from cogworker.core.job import JobFunction
from cogworker.redis.keys import KeySchema
from contrib.conftest import create_database
from contrib.postgres import PostgresServer

Pushed = Callable[[], list[Any]]


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50))


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer | None) -> str | None:
    if postgres_server is None:
        return None
    create_database(postgres_server, "cwsa")
    return f"postgresql+psycopg://cogworker@/cwsa?host={postgres_server.socket_dir}"


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path: Path,
           postgres_url: str | None) -> Iterator[Engine]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'users.sqlite3'}"
    elif postgres_url is None:
        pytest.skip("PostgreSQL binaries are not installed (scripts/install-postgres)")
    else:
        url = postgres_url
    engine = create_engine(url)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def app(redis_url: str, namespace: str) -> Iterator[App]:
    app = App(redis_url=redis_url, namespace=namespace)
    yield app
    app.close()


@pytest.fixture
def greet(app: App) -> JobFunction:
    @app.job
    def greet(name: str) -> None:
        """Never run here: the tests look at what was pushed."""

    return greet


@pytest.fixture
def pushed(redis_client: redis.Redis, keys: KeySchema) -> Pushed:
    """``pushed()``: the first argument of every job on the default queue, oldest first."""
    def read() -> list[Any]:
        raws = redis_client.lrange(keys.queue("default"), 0, -1)
        return [json.loads(raw)["args"][0] for raw in reversed(raws)]

    return read


@pytest.fixture
def binder(restore_binder: None) -> cogworker_sqlalchemy.SQLAlchemyTransactions:
    return cogworker_sqlalchemy.install()


@pytest.mark.usefixtures("binder")
class TestOneSession:
    def test_pushed_after_the_commit(self, engine: Engine, greet: JobFunction,
                                     pushed: Pushed) -> None:
        with Session(engine) as session:
            session.add(User(name="ada"))
            jid = greet.on_commit(using=session).perform_async("ada")
            assert pushed() == []
            session.commit()
            assert pushed() == ["ada"]

        assert isinstance(jid, str)

    def test_with_session_begin(self, engine: Engine, greet: JobFunction,
                                pushed: Pushed) -> None:
        with Session(engine) as session, session.begin():
            session.add(User(name="ada"))
            greet.on_commit(using=session).perform_async("ada")
            greet.on_commit(using=session).perform_in(60, "later")  # scheduled, not queued
            greet.on_commit(using=session).perform_async("bob")
            assert pushed() == []

        assert pushed() == ["ada", "bob"]

    def test_a_rollback_drops_them(self, engine: Engine, greet: JobFunction,
                                   pushed: Pushed) -> None:
        with Session(engine) as session:
            session.add(User(name="ada"))
            greet.on_commit(using=session).perform_async("ada")
            session.rollback()
            session.commit()  # a later commit of the same session pushes nothing old

        assert pushed() == []

    def test_closing_without_a_commit_drops_them(self, engine: Engine, greet: JobFunction,
                                                 pushed: Pushed) -> None:
        session = Session(engine)
        session.add(User(name="ada"))
        greet.on_commit(using=session).perform_async("ada")
        session.close()
        session.commit()

        assert pushed() == []

    def test_with_no_transaction_begun_at_once(self, engine: Engine, greet: JobFunction,
                                               pushed: Pushed) -> None:
        with Session(engine) as session:
            greet.on_commit(using=session).perform_async("now")
            assert pushed() == ["now"]

    def test_each_transaction_pushes_its_own(self, engine: Engine, greet: JobFunction,
                                             pushed: Pushed) -> None:
        with Session(engine) as session:
            session.add(User(name="a"))
            greet.on_commit(using=session).perform_async("first")
            session.commit()
            session.add(User(name="b"))
            greet.on_commit(using=session).perform_async("second")
            assert pushed() == ["first"]
            session.commit()

        assert pushed() == ["first", "second"]


@pytest.mark.usefixtures("binder")
class TestSavepoints:
    def test_a_released_savepoint_waits_for_the_outer_commit(
            self, engine: Engine, greet: JobFunction, pushed: Pushed) -> None:
        with Session(engine) as session, session.begin():
            session.add(User(name="ada"))
            with session.begin_nested():
                greet.on_commit(using=session).perform_async("inner")
            assert pushed() == []

        assert pushed() == ["inner"]

    def test_a_savepoint_rolled_back_drops_only_its_own(
            self, engine: Engine, greet: JobFunction, pushed: Pushed) -> None:
        with Session(engine) as session, session.begin():
            session.add(User(name="ada"))
            greet.on_commit(using=session).perform_async("outer")
            savepoint = session.begin_nested()
            greet.on_commit(using=session).perform_async("inner")
            with session.begin_nested():
                greet.on_commit(using=session).perform_async("innermost")
            savepoint.rollback()
            greet.on_commit(using=session).perform_async("after")

        assert pushed() == ["outer", "after"]

    def test_an_inner_savepoint_rolled_back_keeps_the_outer_savepoints(
            self, engine: Engine, greet: JobFunction, pushed: Pushed) -> None:
        with Session(engine) as session, session.begin():
            session.add(User(name="ada"))
            with session.begin_nested():
                greet.on_commit(using=session).perform_async("kept")
                inner = session.begin_nested()
                greet.on_commit(using=session).perform_async("dropped")
                inner.rollback()

        assert pushed() == ["kept"]

    def test_a_rollback_of_the_whole_drops_the_released_savepoints_too(
            self, engine: Engine, greet: JobFunction, pushed: Pushed) -> None:
        with Session(engine) as session:
            session.add(User(name="ada"))
            with session.begin_nested():
                greet.on_commit(using=session).perform_async("released")
            session.rollback()

        assert pushed() == []


class TestNamingTheSession:
    def test_install_default_lets_perform_on_commit_name_none(
            self, engine: Engine, greet: JobFunction, pushed: Pushed,
            restore_binder: None) -> None:
        current = scoped_session(make_sessionmaker(engine))
        cogworker_sqlalchemy.install(default=current)
        try:
            current.add(User(name="ada"))
            greet.perform_on_commit("scoped")
            assert pushed() == []
            current.commit()
        finally:
            current.remove()

        assert pushed() == ["scoped"]

    def test_a_scoped_session_as_using(self, engine: Engine, greet: JobFunction,
                                       pushed: Pushed, binder: object) -> None:
        current = scoped_session(make_sessionmaker(engine))
        try:
            current.add(User(name="ada"))
            greet.on_commit(using=current).perform_async("scoped")
            current.commit()
        finally:
            current.remove()

        assert pushed() == ["scoped"]

    def test_without_a_default_perform_on_commit_asks_for_the_session(
            self, greet: JobFunction, binder: object) -> None:
        with pytest.raises(TransactionBinderError, match=r"on_commit\(using=session\)"):
            greet.perform_on_commit("x")

    def test_something_else_is_refused(self, greet: JobFunction, binder: object) -> None:
        with pytest.raises(TransactionBinderError, match="takes a Session"):
            greet.on_commit(using="default").perform_async("x")


def test_after_the_commit_every_push_is_tried_and_the_first_error_raised(
        tmp_path: Path, binder: cogworker_sqlalchemy.SQLAlchemyTransactions) -> None:
    ran: list[str] = []

    def failing() -> None:
        ran.append("failing")
        raise ConnectionError("redis is down")

    engine = create_engine(f"sqlite:///{tmp_path / 'x.sqlite3'}")
    with Session(engine) as session:
        session.execute(text("SELECT 1"))
        binder.on_commit(failing, session)
        binder.on_commit(lambda: ran.append("next"), session)
        with pytest.raises(ConnectionError, match="redis is down"):
            session.commit()
        assert session.scalar(text("SELECT 2")) == 2  # the session carries on
    engine.dispose()

    assert ran == ["failing", "next"]


def test_an_async_session(tmp_path: Path, greet: JobFunction, pushed: Pushed,
                          binder: object) -> None:
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    async def scenario() -> list[list[Any]]:
        engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'async.sqlite3'}")
        async with engine.begin() as connection:
            await connection.run_sync(Base.metadata.create_all)
        seen = []
        async with AsyncSession(engine) as session:
            session.add(User(name="ada"))
            greet.on_commit(using=session).perform_async("async-kept")
            nested = await session.begin_nested()
            greet.on_commit(using=session).perform_async("async-dropped")
            await nested.rollback()
            seen.append(pushed())
            await session.commit()
            seen.append(pushed())
        await engine.dispose()
        return seen

    assert asyncio.run(scenario()) == [[], ["async-kept"]]
